// The structure editor of the Structures screen: create and edit with every property rule (PropertyEditor.tsx), a
// live POST /structures/validate as the user types, the settings (versioning, retention, discovery, search) and the
// request body it sends; the Versions tab is in StructureVersions.tsx.
import { useEffect, useMemo, useState } from "preact/hooks"
import type { Property, Structure, StructureList } from "../lib/Types.ts"
import { useSession } from "../Session.tsx"
import {
  AsyncView,
  Button,
  confirmed,
  ErrorBox,
  Field,
  href,
  JsonInput,
  ListInput,
  navigate,
  PageHead,
  Tabs,
  useAction,
  useAsync,
  useToast
} from "../Ui.tsx"
import { PropertyEditor } from "./PropertyEditor.tsx"
import { Versions } from "./StructureVersions.tsx"

type Draft = Record<string, unknown> & { properties: ReadonlyArray<Property> }

const editable = [
  "name",
  "recordSlug",
  "description",
  "properties",
  "status",
  "schemaDiscoveryMode",
  "enableVersioning",
  "retentionPolicy",
  "defaultSearchField",
  "defaultTtlSeconds",
  "schemaDiscoveryConfig",
  "tags"
] as const
const clearable = ["description", "retentionPolicy", "defaultSearchField", "defaultTtlSeconds"] as const

const draftOf = (s: Structure | undefined): Draft => {
  if (s === undefined)
    return { name: "", properties: [], status: "active", schemaDiscoveryMode: "strict", enableVersioning: false, tags: [] }
  const d: Record<string, unknown> = {}
  for (const key of editable) if (s[key] !== undefined && s[key] !== null) d[key] = s[key]
  return d as Draft
}

/** The request body of a draft: empty values left out; on update, cleared ones sent as null. */
const bodyOf = (draft: Draft, update: boolean): Record<string, unknown> => {
  const body: Record<string, unknown> = {}
  for (const [k, v] of Object.entries(draft)) {
    if (v === undefined || v === "") continue
    body[k] = v
  }
  if (update) for (const key of clearable) if (!(key in body)) body[key] = null
  return body
}

interface Validation {
  readonly valid: boolean
  readonly errors: ReadonlyArray<{ readonly field: string; readonly message: string }>
}

export const StructureEditor = ({ id }: { id: string | undefined }) => {
  const session = useSession()
  const { api } = session
  const toast = useToast()
  const readOnly = !session.can("write:structures")
  const loaded = useAsync(() => (id === undefined ? Promise.resolve(undefined) : api.get<Structure>(`/structures/${id}`)), [id])
  const targets = useAsync(() => api.get<StructureList>("/structures", { limit: 500 }), [])
  const structure = loaded.state.status === "ready" ? loaded.state.data : undefined
  const [draft, setDraft] = useState<Draft>(() => draftOf(undefined))
  const [tab, setTab] = useState<"definition" | "json" | "versions">("definition")
  const [validation, setValidation] = useState<Validation | undefined>(undefined)
  const save = useAction()

  // a new structure keeps what is typed: only a loaded structure replaces the draft
  useEffect(() => {
    if (id !== undefined && loaded.state.status === "ready") setDraft(draftOf(loaded.state.data))
  }, [loaded.state])

  // live validation, 300 ms after the last change
  useEffect(() => {
    if (readOnly || (id !== undefined && structure === undefined)) return
    let live = true
    const timer = setTimeout(() => {
      api.post<Validation>("/structures/validate", bodyOf(draft, false)).then(
        (v) => {
          if (!live) return
          // editing: the structure's own slug is "taken" by itself
          const errors = v.errors.filter(
            (e) => !(structure !== undefined && e.field === "recordSlug" && draft.recordSlug === structure.recordSlug)
          )
          setValidation({ valid: errors.length === 0, errors })
        },
        () => live && setValidation(undefined)
      )
    }, 300)
    return () => {
      live = false
      clearTimeout(timer)
    }
  }, [draft, structure])

  const problems = useMemo(() => {
    const map = new Map<number, Array<string>>()
    for (const e of validation?.errors ?? []) {
      const m = /^properties\[(\d+)\]\.?(.*)$/.exec(e.field)
      if (m !== null) map.set(Number(m[1]), [...(map.get(Number(m[1])) ?? []), `${m[2] || "property"}: ${e.message}`])
    }
    return map
  }, [validation])

  if (id !== undefined && loaded.state.status !== "ready") {
    return <AsyncView state={loaded.state}>{() => null}</AsyncView>
  }

  const set = (key: string, value: unknown) =>
    setDraft((d) => {
      const next = { ...d }
      if (value === undefined || value === "") delete next[key]
      else next[key] = value
      return next
    })

  const onSave = () =>
    save.run(async () => {
      if (structure === undefined) {
        const created = await api.post<Structure>("/structures", bodyOf(draft, false))
        toast(`Structure ${created.name} created`)
        navigate("structures", created.id)
      } else {
        const updated = await api.put<Structure>(`/structures/${structure.id}`, bodyOf(draft, true))
        toast(`Structure ${updated.name} saved (version ${updated.version})`)
        loaded.reload()
      }
    })

  const deleteProperty = (p: Property) => {
    if (structure === undefined || !confirmed(`Delete property "${p.name}" and its data from every record? Unsaved changes are lost.`))
      return
    void save.run(async () => {
      await api.del(`/structures/${structure.id}/properties`, undefined, { ids: [p.id] })
      toast(`Property ${p.name} deleted`)
      loaded.reload()
    })
  }

  const remove = (hard: boolean) => {
    if (structure === undefined) return
    const question = hard
      ? `Delete ${structure.name} permanently, with all its records, their versions and history? This cannot be undone.`
      : `Delete ${structure.name}? Its records become unreachable until it is deleted permanently.`
    if (!confirmed(question)) return
    void save.run(async () => {
      await api.del(`/structures/${structure.id}`, hard ? { hard: "true" } : undefined)
      toast(`Structure ${structure.name} deleted`)
      navigate("structures")
    })
  }

  const retention = (draft.retentionPolicy ?? {}) as Record<string, unknown>
  const setRetention = (key: string, value: unknown) => {
    const next = { ...retention }
    if (value === undefined) delete next[key]
    else next[key] = value
    set("retentionPolicy", Object.keys(next).length === 0 ? undefined : next)
  }
  const num = (v: string) => (v === "" ? undefined : Number(v))
  const stringProps = draft.properties.filter((p) => p.type === "string").map((p) => p.name)

  return (
    <section>
      <PageHead
        title={
          structure === undefined ? (
            "New structure"
          ) : (
            <>
              {structure.name}{" "}
              <small>
                v{structure.version}
                {structure.isDeleted ? " · deleted" : ""}
              </small>
            </>
          )
        }
      >
        {structure !== undefined && !structure.isDeleted && (
          <a class="btn btn-plain" href={href("records", structure.recordSlug)}>
            Records
          </a>
        )}
        <Button perm="write:structures" kind="primary" busy={save.busy} onClick={() => void onSave()}>
          {structure === undefined ? "Create structure" : "Save"}
        </Button>
        {structure !== undefined && !structure.isDeleted && (
          <Button perm="write:structures" kind="danger" onClick={() => remove(false)}>
            Delete
          </Button>
        )}
        {structure !== undefined && (
          <Button perm="write:structures" kind="danger" onClick={() => remove(true)}>
            Delete permanently
          </Button>
        )}
      </PageHead>
      <ErrorBox error={save.error} title="Not saved" />
      <Tabs
        tabs={
          structure === undefined
            ? [
                ["definition", "Definition"],
                ["json", "JSON"]
              ]
            : [
                ["definition", "Definition"],
                ["json", "JSON"],
                ["versions", "Versions"]
              ]
        }
        active={tab}
        onChange={setTab}
      />
      {tab !== "versions" && !readOnly && (
        <div
          class={`validation ${validation === undefined ? "" : validation.valid ? "ok" : "bad"}`}
          aria-live="polite"
          data-testid="validation"
        >
          {validation === undefined ? (
            "Checking…"
          ) : validation.valid ? (
            "✓ The definition is valid"
          ) : (
            <>
              <strong>
                {validation.errors.length} problem{validation.errors.length === 1 ? "" : "s"}
              </strong>
              <ul>
                {validation.errors.map((e, i) => (
                  <li key={i}>
                    <code>{e.field}</code>: {e.message}
                  </li>
                ))}
              </ul>
            </>
          )}
        </div>
      )}
      {tab === "definition" && (
        <div class="editor">
          <div class="grid">
            <Field label="Name">
              <input
                name="structure-name"
                value={String(draft.name ?? "")}
                readOnly={readOnly}
                onInput={(e) => set("name", e.currentTarget.value)}
              />
            </Field>
            <Field label="Record slug" hint="generated from the name when empty">
              <input
                name="structure-slug"
                value={String(draft.recordSlug ?? "")}
                readOnly={readOnly}
                onInput={(e) => set("recordSlug", e.currentTarget.value)}
              />
            </Field>
            <Field label="Mode">
              <select
                value={String(draft.schemaDiscoveryMode ?? "strict")}
                disabled={readOnly}
                onChange={(e) => set("schemaDiscoveryMode", e.currentTarget.value)}
              >
                <option value="strict">strict (undeclared fields refused)</option>
                <option value="auto-evolving">auto-evolving (undeclared fields kept)</option>
                <option value="schemaless">schemaless</option>
              </select>
            </Field>
            <Field label="Status">
              <select value={String(draft.status ?? "active")} disabled={readOnly} onChange={(e) => set("status", e.currentTarget.value)}>
                <option value="active">active</option>
                <option value="inactive">inactive (no new records)</option>
              </select>
            </Field>
            <Field label="Description">
              <input
                value={String(draft.description ?? "")}
                readOnly={readOnly}
                onInput={(e) => set("description", e.currentTarget.value)}
              />
            </Field>
            <Field label="Tags" hint="comma-separated">
              <ListInput
                value={draft.tags as ReadonlyArray<string> | undefined}
                readOnly={readOnly}
                onChange={(tags) => set("tags", tags ?? [])}
              />
            </Field>
            <Field label="Default search field">
              <select
                value={String(draft.defaultSearchField ?? "")}
                disabled={readOnly}
                onChange={(e) => set("defaultSearchField", e.currentTarget.value)}
              >
                <option value="">(every string value)</option>
                {stringProps.map((n) => (
                  <option key={n} value={n}>
                    {n}
                  </option>
                ))}
              </select>
            </Field>
            <Field label="Default TTL (seconds)">
              <input
                type="number"
                min="1"
                value={draft.defaultTtlSeconds === undefined ? "" : String(draft.defaultTtlSeconds)}
                readOnly={readOnly}
                onInput={(e) => set("defaultTtlSeconds", num(e.currentTarget.value))}
              />
            </Field>
          </div>
          <fieldset class="group">
            <legend>
              <label class="check">
                <input
                  type="checkbox"
                  checked={draft.enableVersioning === true}
                  disabled={readOnly}
                  onChange={(e) => set("enableVersioning", e.currentTarget.checked)}
                />
                Keep versions of the definition
              </label>
            </legend>
            {draft.enableVersioning === true && (
              <div class="grid">
                <Field label="Keep the newest N">
                  <input
                    type="number"
                    min="1"
                    value={retention.maxVersions === undefined ? "" : String(retention.maxVersions)}
                    readOnly={readOnly}
                    onInput={(e) => setRetention("maxVersions", num(e.currentTarget.value))}
                  />
                </Field>
                <Field label="Max age (days)">
                  <input
                    type="number"
                    step="any"
                    value={retention.maxAgeDays === undefined ? "" : String(retention.maxAgeDays)}
                    readOnly={readOnly}
                    onInput={(e) => setRetention("maxAgeDays", num(e.currentTarget.value))}
                  />
                </Field>
                <Field label="Cleanup every (hours)">
                  <input
                    type="number"
                    step="any"
                    value={retention.cleanupIntervalHours === undefined ? "" : String(retention.cleanupIntervalHours)}
                    readOnly={readOnly}
                    onInput={(e) => setRetention("cleanupIntervalHours", num(e.currentTarget.value))}
                  />
                </Field>
                <Field label="Pinned versions">
                  <select
                    value={retention.pinnedVersionsRetained === false ? "false" : "true"}
                    disabled={readOnly}
                    onChange={(e) => setRetention("pinnedVersionsRetained", e.currentTarget.value === "true" ? undefined : false)}
                  >
                    <option value="true">always kept</option>
                    <option value="false">age out like the rest</option>
                  </select>
                </Field>
              </div>
            )}
          </fieldset>
          <h3>Properties</h3>
          <PropertyEditor
            properties={draft.properties}
            onChange={(properties) => setDraft((d) => ({ ...d, properties }))}
            targets={(targets.state.data?.data ?? []).map((s) => s.recordSlug)}
            readOnly={readOnly}
            problems={problems}
            {...(structure === undefined ? {} : { onDeleteStored: deleteProperty })}
          />
        </div>
      )}
      {tab === "json" && (
        <JsonInput
          label="The definition as JSON (the request body)"
          rows={24}
          value={bodyOf(draft, false)}
          readOnly={readOnly}
          onChange={(v) => {
            if (typeof v === "object" && v !== null && !Array.isArray(v)) {
              const d = v as Record<string, unknown>
              setDraft({ ...d, properties: Array.isArray(d.properties) ? (d.properties as Array<Property>) : [] })
            }
          }}
        />
      )}
      {tab === "versions" && structure !== undefined && <Versions structure={structure} />}
    </section>
  )
}
