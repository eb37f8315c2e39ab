// A record's data as a form built from its structure's properties (or as JSON), checked against the schema as the
// user types (lib/RecordCheck.ts) and showing the server's answer per field after a save.
import { useState } from "preact/hooks"
import type { ErrorDetail } from "../lib/ApiClient.ts"
import { checkRecord, type PropertyRules } from "../lib/RecordCheck.ts"
import type { Property, Structure } from "../lib/Types.ts"
import { Field, JsonInput } from "../Ui.tsx"

const NumberInput = ({
  value,
  onChange,
  readOnly,
  label
}: {
  value: unknown
  onChange: (v: unknown) => void
  readOnly: boolean
  label: string
}) => {
  const [text, setText] = useState(typeof value === "number" ? String(value) : value === undefined || value === null ? "" : String(value))
  return (
    <input
      inputMode="decimal"
      aria-label={label}
      name={label}
      value={text}
      readOnly={readOnly}
      onInput={(e) => {
        const t = e.currentTarget.value
        setText(t)
        const n = Number(t)
        onChange(t.trim() === "" ? undefined : Number.isFinite(n) ? n : t)
      }}
    />
  )
}

const Input = ({ p, value, onChange, readOnly }: { p: Property; value: unknown; onChange: (v: unknown) => void; readOnly: boolean }) => {
  const label = p.name
  if (Array.isArray(p.enum) && p.enum.length > 0 && p.type !== "array") {
    const index = p.enum.findIndex((e) => JSON.stringify(e) === JSON.stringify(value))
    return (
      <select
        name={label}
        aria-label={label}
        value={index < 0 ? "" : String(index)}
        disabled={readOnly}
        onChange={(e) =>
          onChange(e.currentTarget.value === "" ? undefined : (p.enum as ReadonlyArray<unknown>)[Number(e.currentTarget.value)])
        }
      >
        <option value="">(unset)</option>
        {(p.enum as ReadonlyArray<unknown>).map((v, i) => (
          <option key={i} value={String(i)}>
            {typeof v === "string" ? v : JSON.stringify(v)}
          </option>
        ))}
      </select>
    )
  }
  switch (p.type) {
    case "number":
      return <NumberInput label={label} value={value} readOnly={readOnly} onChange={onChange} />
    case "boolean":
      return (
        <select
          name={label}
          aria-label={label}
          value={value === true ? "true" : value === false ? "false" : ""}
          disabled={readOnly}
          onChange={(e) => onChange(e.currentTarget.value === "" ? undefined : e.currentTarget.value === "true")}
        >
          <option value="">(unset)</option>
          <option value="true">true</option>
          <option value="false">false</option>
        </select>
      )
    case "string":
    case "datetime":
    case "reference": {
      if (p.type === "reference" && p.relationship === "many-to-many") break
      const text = typeof value === "string" ? value : value === undefined || value === null ? "" : JSON.stringify(value)
      const set = (t: string) => onChange(t === "" ? undefined : t)
      if (p.type === "string" && ["textarea", "markdown", "code", "html"].includes(String(p.renderAs))) {
        return (
          <textarea name={label} aria-label={label} rows={4} value={text} readOnly={readOnly} onInput={(e) => set(e.currentTarget.value)} />
        )
      }
      const secret = p.type === "string" && (p.isSecret === true || p.renderAs === "secret")
      const placeholder =
        p.type === "datetime" ? "2026-01-01T10:00:00Z" : p.type === "reference" ? `id of a ${String(p.target)} record` : ""
      return (
        <span class="input-row">
          {p.type === "string" && p.renderAs === "color" && (
            <input
              type="color"
              aria-label={`${label} colour`}
              value={/^#[0-9a-f]{6}$/i.test(text) ? text : "#000000"}
              disabled={readOnly}
              onInput={(e) => set(e.currentTarget.value)}
            />
          )}
          {secret ? (
            <input
              name={label}
              aria-label={label}
              type="password"
              value={text}
              readOnly={readOnly}
              autocomplete="off"
              onInput={(e) => set(e.currentTarget.value)}
            />
          ) : (
            <input
              name={label}
              aria-label={label}
              value={text}
              placeholder={placeholder}
              readOnly={readOnly}
              autocomplete="off"
              onInput={(e) => set(e.currentTarget.value)}
            />
          )}
        </span>
      )
    }
  }
  return <JsonInput label={`${label} (JSON)`} rows={3} value={value} readOnly={readOnly} onChange={onChange} />
}

export interface RecordFormProps {
  readonly structure: Structure
  readonly data: Record<string, unknown>
  readonly onChange: (data: Record<string, unknown>) => void
  readonly readOnly: boolean
  /** the server's answer to the last save, by field (`data.price`) */
  readonly serverDetails?: ReadonlyArray<ErrorDetail>
}

export const RecordForm = ({ structure, data, onChange, readOnly, serverDetails = [] }: RecordFormProps) => {
  const [asJson, setAsJson] = useState(false)
  const problems = readOnly
    ? []
    : checkRecord(structure.properties as unknown as ReadonlyArray<PropertyRules>, data, structure.schemaDiscoveryMode === "strict")
  const problemOf = (name: string) => {
    const field = `data.${name}`
    const mine = [...problems, ...serverDetails].filter(
      (d) => d.field === field || d.field.startsWith(`${field}.`) || d.field.startsWith(`${field}[`)
    )
    return mine.length === 0 ? undefined : mine.map((d) => (d.field === field ? d.message : `${d.field.slice(5)}: ${d.message}`)).join("; ")
  }
  const set = (name: string, value: unknown) => {
    const next = { ...data }
    if (value === undefined) delete next[name]
    else next[name] = value
    onChange(next)
  }
  const declared = new Set(structure.properties.map((p) => p.name))
  const extra = Object.keys(data).filter((k) => !declared.has(k))
  return (
    <div class="record-form">
      <label class="check">
        <input type="checkbox" checked={asJson} onChange={(e) => setAsJson(e.currentTarget.checked)} />
        Edit as JSON
      </label>
      {asJson ? (
        <JsonInput
          label="data"
          rows={16}
          value={data}
          readOnly={readOnly}
          onChange={(v) => typeof v === "object" && v !== null && !Array.isArray(v) && onChange(v as Record<string, unknown>)}
        />
      ) : (
        <div class="grid">
          {structure.properties.map((p) =>
            p.expression !== undefined ? (
              <Field key={p.name} label={`${p.name} (computed)`} hint={String(p.expression)}>
                <input value={data[p.name] === undefined ? "" : JSON.stringify(data[p.name])} readOnly />
              </Field>
            ) : (
              <Field
                key={p.name}
                label={`${p.name}${p.required === true ? " *" : ""}`}
                hint={`${p.type}${p.type === "reference" ? ` → ${String(p.target)}` : ""}${typeof p.description === "string" ? ` · ${p.description}` : ""}`}
                error={problemOf(p.name)}
              >
                <Input p={p} value={data[p.name]} readOnly={readOnly} onChange={(v) => set(p.name, v)} />
              </Field>
            )
          )}
          {extra.length > 0 && (
            <Field
              label="Undeclared fields"
              hint="kept as they are (auto-evolving or schemaless structure)"
              error={
                extra
                  .map(problemOf)
                  .filter((x) => x !== undefined)
                  .join("; ") || undefined
              }
            >
              <code>{extra.join(", ")}</code>
            </Field>
          )}
        </div>
      )}
      {!readOnly && problems.length > 0 && (
        <p class="hint-problems" data-testid="record-problems">
          {problems.length} problem{problems.length === 1 ? "" : "s"} against the schema
        </p>
      )}
    </div>
  )
}

/** The data to send: computed fields are the server's (a virtual one cannot be written back). */
export const writableData = (structure: Structure, data: Record<string, unknown>): Record<string, unknown> => {
  const computed = new Set(structure.properties.filter((p) => p.expression !== undefined).map((p) => p.name))
  return Object.fromEntries(Object.entries(data).filter(([k]) => !computed.has(k)))
}
