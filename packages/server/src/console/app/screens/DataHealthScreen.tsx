// Data health (docs/intelligence.md): per structure, the schema suggestions (accept / reject, scan the stored
// records), the field profiles as small histograms, the anomaly insights (acknowledge / dismiss, analyse now) and
// the validation suggestions (accept as a record update / reject, scan now). Routes: #/data-health and
// #/data-health/<slug>/<tab>.
import { useEffect, useState } from "preact/hooks"
import type { StructureList } from "../lib/Types.ts"
import { useSession } from "../Session.tsx"
import {
  AsyncView,
  Button,
  ErrorBox,
  href,
  navigate,
  PageHead,
  StatusBadge,
  TableHead,
  Tabs,
  useAction,
  useAsync,
  useToast,
  when
} from "../Ui.tsx"

interface ListOf<T> {
  readonly data: ReadonlyArray<T>
  readonly total: number
}

interface SchemaSuggestion {
  readonly id: string
  readonly kind: string
  readonly property: Record<string, unknown>
  readonly confidence: number
  readonly sampleCount: number
  readonly examples: ReadonlyArray<unknown>
  readonly explanation: string
  readonly status: string
  readonly createdAt: string
}

interface Insight {
  readonly id: string
  readonly recordId: string | null
  readonly field: string | null
  readonly kind: string
  readonly severity: string
  readonly score: number
  readonly message: string
  readonly status: string
  readonly createdAt: string
}

interface ValidationSuggestion {
  readonly id: string
  readonly recordId: string
  readonly field: string
  readonly currentValue: unknown
  readonly suggestedValue: unknown
  readonly reason: string
  readonly source: string
  readonly status: string
}

interface FieldProfile {
  readonly count: number
  readonly types: Record<string, number>
  readonly min: number | null
  readonly max: number | null
  readonly formats: Record<string, number>
}

interface Profiles {
  readonly scan: { readonly records: number; readonly fields: Record<string, FieldProfile> }
  readonly observed: { readonly records: number; readonly fields: Record<string, FieldProfile> }
}

type Tab = "schema" | "insights" | "validation"

export const DataHealthScreen = ({ route }: { route: ReadonlyArray<string> }) => {
  const { api } = useSession()
  const slug = route[0]
  const tab: Tab = route[1] === "insights" ? "insights" : route[1] === "validation" ? "validation" : "schema"
  const structures = useAsync(
    () => api.get<StructureList>("/structures", { limit: 500, "sort[field]": "name", "sort[direction]": "asc" }),
    []
  )
  // structures made after the screen opened (another tab, the CLI, a function) join the picker when it is focused
  // or the window comes back (a reload keeps the list shown meanwhile)
  const { reload } = structures
  useEffect(() => {
    const onVisible = () => document.visibilityState === "visible" && reload()
    window.addEventListener("focus", reload)
    document.addEventListener("visibilitychange", onVisible)
    return () => {
      window.removeEventListener("focus", reload)
      document.removeEventListener("visibilitychange", onVisible)
    }
  }, [reload])
  return (
    <section>
      <PageHead title="Data health">
        <AsyncView state={structures.state}>
          {(list) => (
            <select
              aria-label="Structure"
              value={slug ?? ""}
              onFocus={reload}
              onChange={(e) => navigate("data-health", e.currentTarget.value, tab)}
            >
              <option value="">choose a structure…</option>
              {list.data.map((s) => (
                <option key={s.id} value={s.recordSlug}>
                  {s.name}
                </option>
              ))}
            </select>
          )}
        </AsyncView>
      </PageHead>
      {slug === undefined || slug === "" ? (
        <p class="muted">Pick a structure to see what its records hold: suggested schema changes, anomalies and probable typos.</p>
      ) : (
        <>
          <Tabs
            tabs={[
              ["schema", "Schema"],
              ["insights", "Anomalies"],
              ["validation", "Corrections"]
            ]}
            active={tab}
            onChange={(t) => navigate("data-health", slug, t)}
          />
          {tab === "schema" ? (
            <SchemaPanel key={slug} slug={slug} />
          ) : tab === "insights" ? (
            <InsightsPanel key={slug} slug={slug} />
          ) : (
            <ValidationPanel key={slug} slug={slug} />
          )}
        </>
      )}
    </section>
  )
}

/** Starts a job and reloads the panel a few times while it runs. */
/** A job's or scan batch's status path, from what starting it answered (`{jobId}` or `{batchId}`). */
const statusPath = (started: unknown): string | undefined => {
  const { jobId, batchId } = (started ?? {}) as { jobId?: string; batchId?: string }
  if (typeof jobId === "string") return `/intelligence-jobs/${encodeURIComponent(jobId)}`
  if (typeof batchId === "string") return `/ai-validation/batch/${encodeURIComponent(batchId)}`
  return undefined
}

/** Starts a job, follows it until it ends (a scan of many records takes a while), then reloads the panel. */
const useJob = (reload: () => void) => {
  const { api } = useSession()
  const toast = useToast()
  const action = useAction()
  const start = (run: () => Promise<unknown>, label: string) =>
    action.run(async () => {
      const path = statusPath(await run())
      toast(`${label} started`)
      const deadline = Date.now() + 10 * 60_000
      while (path !== undefined && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 1000))
        const job = await api.get<{ status: string; error?: string | null }>(path)
        if (job.status === "completed" || job.status === "failed") {
          toast(job.status === "completed" ? `${label} finished` : `${label} failed: ${job.error ?? "see the server log"}`)
          break
        }
      }
      reload()
    })
  return { start, action }
}

const collection = (slug: string) => `/collections/${encodeURIComponent(slug)}`

const SchemaPanel = ({ slug }: { slug: string }) => {
  const { api } = useSession()
  const suggestions = useAsync(() => api.get<ListOf<SchemaSuggestion>>(`${collection(slug)}/schema-suggestions`, { limit: 100 }), [slug])
  const profiles = useAsync(() => api.get<Profiles>(`${collection(slug)}/field-profiles`), [slug])
  const reload = () => {
    suggestions.reload()
    profiles.reload()
  }
  const job = useJob(reload)
  const resolve = useAction()
  return (
    <>
      <div class="filters">
        <Button
          perm="write:structures"
          busy={job.action.busy}
          onClick={() => job.start(() => api.post(`${collection(slug)}/schema-discovery/scan`), "Scan")}
        >
          Scan stored records
        </Button>
        <Button onClick={reload}>Refresh</Button>
      </div>
      <ErrorBox error={job.action.error ?? resolve.error} />
      <AsyncView state={suggestions.state} isEmpty={(d) => d.data.length === 0} empty="No suggestions yet: scan the stored records.">
        {(d) => (
          <table class="table">
            <TableHead columns={["Suggestion", "Why", "Confidence", "Samples", "Status", ""]} />
            <tbody>
              {d.data.map((s) => (
                <tr key={s.id} data-testid="schema-suggestion">
                  <td>
                    <code>{s.kind}</code> <strong>{String(s.property.name)}</strong>
                    {s.property.type !== undefined &&
                      ` (${String(s.property.type)}${s.property.format ? `, ${String(s.property.format)}` : ""})`}
                  </td>
                  <td>{s.explanation}</td>
                  <td>{Math.round(s.confidence * 100)} %</td>
                  <td>{s.sampleCount}</td>
                  <td>
                    <StatusBadge status={s.status} />
                  </td>
                  <td>
                    {s.status === "pending" && (
                      <>
                        <Button
                          perm="write:structures"
                          kind="primary"
                          onClick={() => resolve.run(() => api.post(`${collection(slug)}/schema-suggestions/${s.id}/accept`)).then(reload)}
                        >
                          Accept
                        </Button>
                        <Button
                          perm="write:structures"
                          onClick={() => resolve.run(() => api.post(`${collection(slug)}/schema-suggestions/${s.id}/reject`)).then(reload)}
                        >
                          Reject
                        </Button>
                      </>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </AsyncView>
      <h2>Field profiles</h2>
      <AsyncView state={profiles.state}>{(p) => <ProfileTable profile={p.scan.records > 0 ? p.scan : p.observed} />}</AsyncView>
    </>
  )
}

const TYPE_COLOURS: Record<string, string> = {
  string: "#4c7bd9",
  number: "#2e9e6a",
  boolean: "#c98a1b",
  object: "#8a5cc2",
  array: "#c2527a",
  null: "#999"
}

/** One bar per field: the share of each JSON type among its values. */
const ProfileTable = ({ profile }: { profile: Profiles["scan"] }) => {
  const fields = Object.entries(profile.fields)
  if (fields.length === 0) return <p class="muted">No profile yet.</p>
  return (
    <table class="table">
      <TableHead columns={["Field", "Present", "Types", "Range", "Formats"]} />
      <tbody>
        {fields.map(([path, f]) => {
          const total = Object.values(f.types).reduce((a, b) => a + b, 0) || 1
          return (
            <tr key={path}>
              <td>
                <code>{path}</code>
              </td>
              <td>
                {f.count} of {profile.records}
              </td>
              <td>
                <div
                  style={{ display: "flex", width: "160px", height: "10px", borderRadius: "3px", overflow: "hidden" }}
                  title={JSON.stringify(f.types)}
                >
                  {Object.entries(f.types).map(([t, n]) => (
                    <span key={t} style={{ width: `${(n / total) * 100}%`, background: TYPE_COLOURS[t] ?? "#666" }} />
                  ))}
                </div>
                <span class="muted">
                  {Object.entries(f.types)
                    .map(([t, n]) => `${t} ${n}`)
                    .join(" · ")}
                </span>
              </td>
              <td>{f.min !== null ? `${f.min} … ${f.max}` : ""}</td>
              <td class="muted">
                {Object.entries(f.formats)
                  .map(([k, n]) => `${k} ${n}`)
                  .join(" · ")}
              </td>
            </tr>
          )
        })}
      </tbody>
    </table>
  )
}

const InsightsPanel = ({ slug }: { slug: string }) => {
  const { api } = useSession()
  const [status, setStatus] = useState("open")
  const insights = useAsync(
    () => api.get<ListOf<Insight>>("/anomaly-insights", { collection: slug, status: status || undefined, limit: 100 }),
    [slug, status]
  )
  const job = useJob(insights.reload)
  const resolve = useAction()
  return (
    <>
      <div class="filters">
        <select aria-label="Status" value={status} onChange={(e) => setStatus(e.currentTarget.value)}>
          <option value="">every status</option>
          {["open", "acknowledged", "dismissed"].map((s) => (
            <option key={s} value={s}>
              {s}
            </option>
          ))}
        </select>
        <Button
          perm="write:structures"
          busy={job.action.busy}
          onClick={() => job.start(() => api.post(`${collection(slug)}/anomaly-analysis`), "Analysis")}
        >
          Analyse now
        </Button>
        <Button onClick={insights.reload}>Refresh</Button>
      </div>
      <ErrorBox error={job.action.error ?? resolve.error} />
      <AsyncView state={insights.state} isEmpty={(d) => d.data.length === 0} empty="No insights.">
        {(d) => (
          <table class="table">
            <TableHead columns={["When", "Kind", "Severity", "What", "Record", ""]} />
            <tbody>
              {d.data.map((i) => (
                <tr key={i.id} data-testid="insight">
                  <td>{when(i.createdAt)}</td>
                  <td>{i.kind}</td>
                  <td>
                    <StatusBadge status={i.severity} />
                  </td>
                  <td>{i.message}</td>
                  <td>{i.recordId !== null && <a href={href("records", slug, i.recordId)}>{i.recordId.slice(0, 8)}</a>}</td>
                  <td>
                    {i.status === "open" && (
                      <Button
                        perm="write:structures"
                        onClick={() => resolve.run(() => api.post(`/anomaly-insights/${i.id}/acknowledge`)).then(insights.reload)}
                      >
                        Acknowledge
                      </Button>
                    )}
                    {i.status !== "dismissed" && (
                      <Button
                        perm="write:structures"
                        onClick={() => resolve.run(() => api.post(`/anomaly-insights/${i.id}/dismiss`)).then(insights.reload)}
                      >
                        Dismiss
                      </Button>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </AsyncView>
    </>
  )
}

const ValidationPanel = ({ slug }: { slug: string }) => {
  const { api } = useSession()
  const list = useAsync(
    () => api.get<ListOf<ValidationSuggestion>>("/ai-validation/suggestions", { collection: slug, status: "pending", limit: 100 }),
    [slug]
  )
  const job = useJob(list.reload)
  const resolve = useAction()
  const show = (v: unknown) => (v === null ? "—" : JSON.stringify(v))
  return (
    <>
      <div class="filters">
        <Button
          perm="write:structures"
          busy={job.action.busy}
          onClick={() => job.start(() => api.post(`${collection(slug)}/ai-validation/scan`), "Scan")}
        >
          Check records
        </Button>
        <Button onClick={list.reload}>Refresh</Button>
      </div>
      <ErrorBox error={job.action.error ?? resolve.error} />
      <AsyncView state={list.state} isEmpty={(d) => d.data.length === 0} empty="No pending corrections.">
        {(d) => (
          <table class="table">
            <TableHead columns={["Record", "Field", "Now", "Suggested", "Why", ""]} />
            <tbody>
              {d.data.map((s) => (
                <tr key={s.id} data-testid="validation-suggestion">
                  <td>
                    <a href={href("records", slug, s.recordId)}>{s.recordId.slice(0, 8)}</a>
                  </td>
                  <td>
                    <code>{s.field}</code>
                  </td>
                  <td>{show(s.currentValue)}</td>
                  <td>{show(s.suggestedValue)}</td>
                  <td>
                    {s.reason} {s.source === "model" && <span class="muted">(model)</span>}
                  </td>
                  <td>
                    {s.suggestedValue !== null && (
                      <Button
                        perm="write:records"
                        kind="primary"
                        onClick={() => resolve.run(() => api.post(`/ai-validation/suggestions/${s.id}/accept`)).then(list.reload)}
                      >
                        Accept
                      </Button>
                    )}
                    <Button
                      perm="write:structures"
                      onClick={() => resolve.run(() => api.post(`/ai-validation/suggestions/${s.id}/reject`)).then(list.reload)}
                    >
                      Reject
                    </Button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </AsyncView>
    </>
  )
}
