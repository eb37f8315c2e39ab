// The type-specific part of the trigger editor: the metadata fields of each execution type (event and structure,
// schedule with its time zone, HTTP path) and, for scheduled triggers, the preview of the next fire times computed
// in the browser by the server's own schedule module.
import { useEffect, useMemo, useState } from "preact/hooks"
import { formatInZone, previewSchedule } from "../lib/SchedulePreview.ts"
import type { ExecutionType, Trigger } from "../lib/Types.ts"
import { Field } from "../Ui.tsx"

const events = [
  "record_created",
  "record_updated",
  "record_deleted",
  "record_restored",
  "record_reverted",
  "record_create_failed",
  "record_updated_failed",
  "record_deleted_failed"
]

const timeZones = (() => {
  try {
    return (Intl as unknown as { supportedValuesOf: (k: string) => ReadonlyArray<string> }).supportedValuesOf("timeZone")
  } catch {
    return ["UTC"]
  }
})()

export interface Form {
  readonly name: string
  readonly description: string
  readonly functionId: string
  readonly executionType: ExecutionType
  readonly triggerMetadata: Record<string, unknown>
}

const scheduleKeys = ["scheduleType", "interval", "cronExpression", "scheduledAt", "timezone"]

export const SchedulePreviewPanel = ({ metadata, trigger }: { metadata: Record<string, unknown>; trigger: Trigger | undefined }) => {
  const [now, setNow] = useState(() => new Date())
  useEffect(() => {
    const timer = setInterval(() => setNow(new Date()), 30_000)
    return () => clearInterval(timer)
  }, [])
  const unchanged =
    trigger !== undefined && scheduleKeys.every((k) => JSON.stringify(trigger.triggerMetadata[k]) === JSON.stringify(metadata[k]))
  const next = unchanged && !trigger.paused && typeof trigger.nextRunAt === "string" ? new Date(trigger.nextRunAt) : undefined
  const preview = useMemo(() => previewSchedule(metadata, now, 5, next), [JSON.stringify(metadata), now.getTime(), next?.getTime()])
  const zone = typeof metadata.timezone === "string" && metadata.timezone !== "" ? metadata.timezone : "UTC"
  return (
    <div class="schedule-preview" data-testid="schedule-preview">
      <h4>Next fire times {unchanged && trigger?.paused ? "(after a resume now)" : next === undefined ? "(if saved now)" : ""}</h4>
      {preview.ok ? (
        preview.times.length === 0 ? (
          <p class="muted">None: it fired already.</p>
        ) : (
          <ol>
            {preview.times.map((t) => (
              <li key={t.getTime()}>
                {formatInZone(t, zone)}
                {zone !== "UTC" && <span class="muted"> · {t.toISOString()}</span>}
              </li>
            ))}
          </ol>
        )
      ) : (
        <ul class="error-details">
          {preview.problems.map((p, i) => (
            <li key={i}>
              <code>{p.field}</code>: {p.message}
            </li>
          ))}
        </ul>
      )}
    </div>
  )
}

export const MetadataFields = ({
  form,
  setMeta,
  readOnly,
  structures
}: {
  form: Form
  setMeta: (key: string, value: unknown) => void
  readOnly: boolean
  structures: ReadonlyArray<string>
}) => {
  const m = form.triggerMetadata
  const str = (k: string) => (typeof m[k] === "string" ? (m[k] as string) : "")
  switch (form.executionType) {
    case "event-driven":
      return (
        <div class="grid">
          <Field label="Event">
            <select value={str("event")} disabled={readOnly} onChange={(e) => setMeta("event", e.currentTarget.value || undefined)}>
              <option value="">choose…</option>
              {events.map((e) => (
                <option key={e} value={e}>
                  {e}
                </option>
              ))}
            </select>
          </Field>
          <Field label="Structure">
            <select
              value={str("recordSlug")}
              disabled={readOnly}
              onChange={(e) => setMeta("recordSlug", e.currentTarget.value || undefined)}
            >
              <option value="">choose…</option>
              {structures.map((s) => (
                <option key={s} value={s}>
                  {s}
                </option>
              ))}
            </select>
          </Field>
        </div>
      )
    case "scheduled": {
      const kind = str("scheduleType") || "interval"
      return (
        <div class="grid">
          <Field label="Schedule">
            <select value={kind} disabled={readOnly} onChange={(e) => setMeta("scheduleType", e.currentTarget.value)}>
              <option value="interval">every N seconds</option>
              <option value="cron">cron (5 fields)</option>
              <option value="once">once</option>
            </select>
          </Field>
          {kind === "interval" && (
            <Field label="Interval (seconds)">
              <input
                name="interval"
                type="number"
                step="any"
                min="0"
                value={typeof m.interval === "number" ? String(m.interval) : ""}
                readOnly={readOnly}
                onInput={(e) => setMeta("interval", e.currentTarget.value === "" ? undefined : Number(e.currentTarget.value))}
              />
            </Field>
          )}
          {kind === "cron" && (
            <Field label="Cron expression" hint="minute hour day month weekday (Sunday 0), e.g. 0 9 * * 1-5">
              <input
                name="cronExpression"
                class="code"
                value={str("cronExpression")}
                readOnly={readOnly}
                onInput={(e) => setMeta("cronExpression", e.currentTarget.value)}
              />
            </Field>
          )}
          {kind === "once" && (
            <Field label="At" hint="ISO 8601; without an offset it is read in the time zone">
              <input
                name="scheduledAt"
                value={str("scheduledAt")}
                placeholder="2030-01-01T09:00:00"
                readOnly={readOnly}
                onInput={(e) => setMeta("scheduledAt", e.currentTarget.value)}
              />
            </Field>
          )}
          {kind !== "interval" && (
            <Field label="Time zone">
              <input
                name="timezone"
                list="time-zones"
                value={str("timezone")}
                placeholder="UTC"
                readOnly={readOnly}
                onInput={(e) => setMeta("timezone", e.currentTarget.value || undefined)}
              />
              <datalist id="time-zones">
                {timeZones.map((z) => (
                  <option key={z} value={z} />
                ))}
              </datalist>
            </Field>
          )}
        </div>
      )
    }
    case "http-trigger":
      return (
        <Field
          label="Path"
          hint="served at /workspace/{ws}/api/v1/http-triggers/<path>, any method, with a token holding execute:functions"
        >
          <input
            name="path"
            value={str("path")}
            placeholder="/orders/new"
            readOnly={readOnly}
            onInput={(e) => setMeta("path", e.currentTarget.value)}
          />
        </Field>
      )
    default:
      return null
  }
}
