// Edits a structure's properties with every rule of each type (the property schemas of /openapi.json): common
// flags, string/number/datetime constraints, computed fields, auto-increment, array items and item schemas, nested
// object properties, references. Nested property lists (object properties, object array items) reuse the editor.
import { useState } from "preact/hooks"
import type { Property, PropertyType } from "../lib/Types.ts"
import { Field, JsonInput, ListInput } from "../Ui.tsx"

type Kind = "number" | "text" | "bool" | "tri" | "select" | "json" | "list"

interface Rule {
  readonly key: string
  readonly label: string
  readonly kind: Kind
  readonly options?: ReadonlyArray<string>
  readonly hint?: string
}

const computed: ReadonlyArray<Rule> = [
  { key: "expression", label: "Computed expression", kind: "text", hint: "e.g. price * qty, concat(first, ' ', last)" },
  { key: "computedMode", label: "Computed mode", kind: "select", options: ["persisted", "virtual"] }
]

const common: ReadonlyArray<Rule> = [
  { key: "description", label: "Description", kind: "text" },
  { key: "nullable", label: "Nullable", kind: "bool" },
  { key: "isUnique", label: "Unique", kind: "bool" },
  { key: "immutable", label: "Immutable", kind: "bool" },
  { key: "indexed", label: "Indexed", kind: "bool", hint: "top-level number, string, datetime or reference" },
  { key: "default", label: "Default (JSON)", kind: "json" },
  { key: "enum", label: "Allowed values (JSON array)", kind: "json" }
]

const stringRules: ReadonlyArray<Rule> = [
  { key: "minLength", label: "Min length", kind: "number" },
  { key: "maxLength", label: "Max length", kind: "number" },
  { key: "pattern", label: "Pattern (RE2)", kind: "text" },
  { key: "format", label: "Format", kind: "select", options: ["email", "url", "uuid", "date", "datetime", "file"] },
  { key: "onDelete", label: "On file delete (format file)", kind: "select", options: ["restrict", "cascade", "set_null"] },
  { key: "renderAs", label: "Render as", kind: "select", options: ["textarea", "secret", "color", "code", "html", "markdown"] },
  { key: "isSecret", label: "Secret (encrypted, masked)", kind: "bool" }
]

const numberRules: ReadonlyArray<Rule> = [
  { key: "minimum", label: "Minimum", kind: "number" },
  { key: "maximum", label: "Maximum", kind: "number" },
  { key: "exclusiveMinimum", label: "Exclusive minimum", kind: "bool" },
  { key: "exclusiveMaximum", label: "Exclusive maximum", kind: "bool" },
  { key: "multipleOf", label: "Multiple of", kind: "number" },
  { key: "integer", label: "Whole numbers only", kind: "bool" }
]

const dateRules: ReadonlyArray<Rule> = [
  { key: "earliestDate", label: "Earliest", kind: "text", hint: "ISO 8601" },
  { key: "latestDate", label: "Latest", kind: "text", hint: "ISO 8601" },
  { key: "exclusiveEarliest", label: "Exclusive earliest", kind: "bool" },
  { key: "exclusiveLatest", label: "Exclusive latest", kind: "bool" }
]

const not: Rule = { key: "not", label: "Forbidden values (JSON array)", kind: "json" }

const byType: Record<PropertyType, ReadonlyArray<Rule>> = {
  string: [...stringRules, not, ...computed],
  number: [...numberRules, not, ...computed],
  boolean: computed,
  datetime: [...dateRules, ...computed],
  array: [
    { key: "minItems", label: "Min items", kind: "number" },
    { key: "maxItems", label: "Max items", kind: "number" },
    { key: "uniqueItems", label: "Unique items", kind: "bool" },
    { key: "isStrict", label: "Strict object items", kind: "tri", hint: "default: true" }
  ],
  object: [
    { key: "requiredProperties", label: "Required nested properties", kind: "list", hint: "comma-separated names" },
    { key: "isStrict", label: "Strict (no undeclared keys)", kind: "tri" }
  ],
  reference: [
    { key: "targetField", label: "Target field", kind: "text" },
    { key: "displayField", label: "Display field", kind: "text" },
    { key: "relationship", label: "Relationship", kind: "select", options: ["many-to-one", "one-to-one", "many-to-many"] },
    { key: "onDelete", label: "On delete", kind: "select", options: ["restrict", "cascade", "set_null"] }
  ]
}

const itemRules: Record<string, ReadonlyArray<Rule>> = {
  string: [...stringRules.filter((r) => !["renderAs", "isSecret"].includes(r.key))],
  number: numberRules,
  datetime: dateRules,
  boolean: [],
  object: []
}

export const propertyTypes: ReadonlyArray<PropertyType> = ["string", "number", "boolean", "datetime", "array", "object", "reference"]

/** Keys every property keeps across a type change. */
const kept = new Set(["id", "name", "type", "required", ...common.map((r) => r.key)])

/** The property as a new type: the rules of the old type dropped, the new type's required parts added. */
export const retype = (p: Property, type: PropertyType): Property => {
  const next: Record<string, unknown> = { type }
  for (const [k, v] of Object.entries(p)) if (kept.has(k) && k !== "type" && k !== "enum" && k !== "default") next[k] = v
  if (type === "array") next.items = { type: "string" }
  if (type === "reference") Object.assign(next, { relationship: "many-to-one", onDelete: "restrict", target: "" })
  return next as unknown as Property
}

const setKey = (o: Record<string, unknown>, key: string, value: unknown): Record<string, unknown> => {
  const next = { ...o }
  if (value === undefined) delete next[key]
  else next[key] = value
  return next
}

const RuleInput = ({
  rule,
  value,
  onChange,
  readOnly
}: {
  rule: Rule
  value: unknown
  onChange: (v: unknown) => void
  readOnly: boolean
}) => {
  switch (rule.kind) {
    case "bool":
      return (
        <label class="check">
          <input
            type="checkbox"
            checked={value === true}
            disabled={readOnly}
            onChange={(e) => onChange(e.currentTarget.checked ? true : undefined)}
          />
          {rule.label}
        </label>
      )
    case "tri":
      return (
        <Field label={rule.label} hint={rule.hint}>
          <select
            value={value === undefined ? "" : String(value)}
            disabled={readOnly}
            onChange={(e) => onChange(e.currentTarget.value === "" ? undefined : e.currentTarget.value === "true")}
          >
            <option value="">(default)</option>
            <option value="true">true</option>
            <option value="false">false</option>
          </select>
        </Field>
      )
    case "select":
      return (
        <Field label={rule.label} hint={rule.hint}>
          <select
            value={typeof value === "string" ? value : ""}
            disabled={readOnly}
            onChange={(e) => onChange(e.currentTarget.value || undefined)}
          >
            <option value="">(none)</option>
            {rule.options!.map((o) => (
              <option key={o} value={o}>
                {o}
              </option>
            ))}
          </select>
        </Field>
      )
    case "number":
      return (
        <Field label={rule.label} hint={rule.hint}>
          <input
            type="number"
            step="any"
            value={typeof value === "number" ? String(value) : ""}
            readOnly={readOnly}
            onInput={(e) => onChange(e.currentTarget.value === "" ? undefined : Number(e.currentTarget.value))}
          />
        </Field>
      )
    case "list":
      return (
        <Field label={rule.label} hint={rule.hint}>
          <ListInput value={Array.isArray(value) ? (value as ReadonlyArray<string>) : undefined} readOnly={readOnly} onChange={onChange} />
        </Field>
      )
    case "json":
      return <JsonInput label={rule.label} value={value} rows={2} readOnly={readOnly} onChange={onChange} />
    case "text":
      return (
        <Field label={rule.label} hint={rule.hint}>
          <input
            value={typeof value === "string" ? value : ""}
            readOnly={readOnly}
            onInput={(e) => onChange(e.currentTarget.value || undefined)}
          />
        </Field>
      )
  }
}

const Rules = ({
  rules,
  value,
  onChange,
  readOnly
}: {
  rules: ReadonlyArray<Rule>
  value: Record<string, unknown>
  onChange: (v: Record<string, unknown>) => void
  readOnly: boolean
}) => (
  <div class="rules">
    {rules.map((rule) => (
      <div key={rule.key} class={`rule rule-${rule.kind}`}>
        <RuleInput rule={rule} value={value[rule.key]} readOnly={readOnly} onChange={(v) => onChange(setKey(value, rule.key, v))} />
      </div>
    ))}
  </div>
)

export interface PropertyEditorProps {
  readonly properties: ReadonlyArray<Property>
  readonly onChange: (properties: ReadonlyArray<Property>) => void
  /** recordSlugs of the workspace's structures, for reference targets */
  readonly targets: ReadonlyArray<string>
  readonly readOnly: boolean
  /** removes a stored property (ids the server knows) */
  readonly onDeleteStored?: (p: Property) => void
  /** validation problems by property index (`properties[2]` prefix stripped) */
  readonly problems?: ReadonlyMap<number, ReadonlyArray<string>>
  readonly path?: string
}

export const PropertyEditor = ({
  properties,
  onChange,
  targets,
  readOnly,
  onDeleteStored,
  problems,
  path = "properties"
}: PropertyEditorProps) => {
  const [open, setOpen] = useState<ReadonlySet<number>>(new Set())
  const update = (i: number, p: Property) => onChange(properties.map((q, j) => (i === j ? p : q)))
  const toggle = (i: number) => setOpen((s) => (s.has(i) ? new Set([...s].filter((x) => x !== i)) : new Set([...s, i])))
  return (
    <div class="properties">
      {properties.length === 0 && <p class="state empty">No properties yet.</p>}
      {properties.map((p, i) => {
        const stored = p.id !== undefined && p.id !== "new" && onDeleteStored !== undefined
        const itemsValue = (p.items ?? { type: "string" }) as Record<string, unknown>
        const mine = problems?.get(i) ?? []
        return (
          <div
            key={p.id !== undefined && p.id !== "new" ? p.id : `i${i}`}
            class={`property${mine.length > 0 ? " invalid" : ""}`}
            data-property={p.name}
          >
            <div class="property-head">
              <input
                aria-label={`${path}[${i}].name`}
                class="name"
                placeholder="name"
                value={p.name}
                readOnly={readOnly}
                onInput={(e) => update(i, { ...p, name: e.currentTarget.value })}
              />
              <select
                aria-label={`${path}[${i}].type`}
                value={p.type}
                disabled={readOnly}
                onChange={(e) => update(i, retype(p, e.currentTarget.value as PropertyType))}
              >
                {propertyTypes.map((t) => (
                  <option key={t} value={t}>
                    {t}
                  </option>
                ))}
              </select>
              {p.type === "reference" && (
                <select
                  aria-label={`${path}[${i}].target`}
                  value={typeof p.target === "string" ? p.target : ""}
                  disabled={readOnly}
                  onChange={(e) => update(i, { ...p, target: e.currentTarget.value })}
                >
                  <option value="">target structure…</option>
                  {targets.map((t) => (
                    <option key={t} value={t}>
                      {t}
                    </option>
                  ))}
                </select>
              )}
              <label class="check">
                <input
                  type="checkbox"
                  checked={p.required === true}
                  disabled={readOnly}
                  onChange={(e) => update(i, setKey(p, "required", e.currentTarget.checked ? true : undefined) as Property)}
                />
                required
              </label>
              <button type="button" class="btn btn-plain" aria-expanded={open.has(i)} onClick={() => toggle(i)}>
                {open.has(i) ? "Hide rules" : "Rules"}
              </button>
              {!readOnly && (
                <>
                  <button
                    type="button"
                    class="btn btn-plain"
                    title="Move up"
                    disabled={i === 0}
                    onClick={() => {
                      const next = [...properties]
                      ;[next[i - 1], next[i]] = [next[i]!, next[i - 1]!]
                      onChange(next)
                    }}
                  >
                    ↑
                  </button>
                  <button
                    type="button"
                    class="btn btn-danger"
                    title={stored ? "Delete this property and its data from every record" : "Remove"}
                    onClick={() => (stored ? onDeleteStored!(p) : onChange(properties.filter((_, j) => j !== i)))}
                  >
                    {stored ? "Delete" : "Remove"}
                  </button>
                </>
              )}
            </div>
            {mine.length > 0 && (
              <ul class="inline-errors">
                {mine.map((m, k) => (
                  <li key={k}>{m}</li>
                ))}
              </ul>
            )}
            {open.has(i) && (
              <div class="property-body">
                <Rules rules={common} value={p} readOnly={readOnly} onChange={(v) => update(i, v as Property)} />
                {p.type === "number" && (
                  <div class="rules">
                    <label class="check">
                      <input
                        type="checkbox"
                        checked={p.autoIncrement !== undefined}
                        disabled={readOnly}
                        onChange={(e) =>
                          update(
                            i,
                            setKey(p, "autoIncrement", e.currentTarget.checked ? { startAt: 1, incrementBy: 1 } : undefined) as Property
                          )
                        }
                      />
                      Auto-increment
                    </label>
                    {p.autoIncrement !== undefined && (
                      <Rules
                        rules={[
                          { key: "startAt", label: "Start at", kind: "number" },
                          { key: "incrementBy", label: "Increment by", kind: "number" }
                        ]}
                        value={p.autoIncrement as Record<string, unknown>}
                        readOnly={readOnly}
                        onChange={(v) => update(i, { ...p, autoIncrement: v })}
                      />
                    )}
                  </div>
                )}
                <Rules rules={byType[p.type]} value={p} readOnly={readOnly} onChange={(v) => update(i, v as Property)} />
                {p.type === "array" && (
                  <div class="nested">
                    <h4>Items</h4>
                    <Field label="Item type">
                      <select
                        value={String(itemsValue.type)}
                        disabled={readOnly}
                        onChange={(e) => {
                          const type = e.currentTarget.value
                          const next = setKey({ ...p, items: { type } }, "itemSchema", type === "object" ? (p.itemSchema ?? []) : undefined)
                          update(i, next as Property)
                        }}
                      >
                        {["string", "number", "boolean", "datetime", "object"].map((t) => (
                          <option key={t} value={t}>
                            {t}
                          </option>
                        ))}
                      </select>
                    </Field>
                    <Rules
                      rules={[
                        ...(itemRules[String(itemsValue.type)] ?? []),
                        { key: "enum", label: "Allowed item values (JSON array)", kind: "json" }
                      ]}
                      value={itemsValue}
                      readOnly={readOnly}
                      onChange={(v) => update(i, { ...p, items: v })}
                    />
                    {itemsValue.type === "object" && (
                      <>
                        <h4>Item schema</h4>
                        <PropertyEditor
                          path={`${path}[${i}].itemSchema`}
                          properties={(p.itemSchema ?? []) as ReadonlyArray<Property>}
                          targets={targets}
                          readOnly={readOnly}
                          onChange={(ps) => update(i, { ...p, itemSchema: ps })}
                        />
                      </>
                    )}
                  </div>
                )}
                {p.type === "object" && (
                  <div class="nested">
                    <h4>Nested properties</h4>
                    <PropertyEditor
                      path={`${path}[${i}].properties`}
                      properties={(p.properties ?? []) as ReadonlyArray<Property>}
                      targets={targets}
                      readOnly={readOnly}
                      onChange={(ps) => update(i, { ...p, properties: ps })}
                    />
                  </div>
                )}
              </div>
            )}
          </div>
        )
      })}
      {!readOnly && (
        <button
          type="button"
          class="btn btn-plain add"
          onClick={() => {
            onChange([...properties, { id: "new", name: "", type: "string" }])
          }}
        >
          + Add property
        </button>
      )}
    </div>
  )
}
