// Structures: the list (search, deleted ones), create and edit with every property rule, a live
// POST /structures/validate as the user types, versions with pins and a diff between any two.
// Size: over 500 lines, kept whole: one screen; its list, property editor and dialogs share the screen state.
import { useEffect, useMemo, useState } from "preact/hooks"
import { jsonDiff } from "../lib/Diff.ts"
import type { Property, Structure, StructureList, StructureVersion } from "../lib/Types.ts"
import { useSession } from "../Session.tsx"
import {
  AsyncView,
  Button,
  cellText,
  confirmed,
  ErrorBox,
  Field,
  href,
  JsonInput,
  ListInput,
  navigate,
  PageHead,
  Pager,
  TableHead,
  Tabs,
  useAction,
  useAsync,
  useToast,
  when
} from "../Ui.tsx"
import { PropertyEditor } from "./PropertyEditor.tsx"

export const StructuresScreen = ({ route }: { route: ReadonlyArray<string> }) =>
  route[0] === undefined ? <StructureListView /> : <StructureEditor key={route[0]} id={route[0] === "new" ? undefined : route[0]} />

const StructureListView = () => {
  const { api } = useSession()
  const [search, setSearch] = useState("")
  const [deleted, setDeleted] = useState(false)
  const [page, setPage] = useState(1)
  const { state } = useAsync(
    () =>
      api.get<StructureList>("/structures", {
        limit: 50,
        page,
        search: search.trim() || undefined,
        "sort[field]": "name",
        "sort[direction]": "asc",
        "filter[isDeleted]": deleted ? "true" : undefined
      }),
    [search, deleted, page]
  )
  return (
    <section>
      <PageHead title="Structures">
        <Button perm="write:structures" kind="primary" onClick={() => navigate("structures", "new")}>
          New structure
        </Button>
      </PageHead>
      <div class="toolbar">
        <input
          type="search"
          placeholder="Search by name"
          aria-label="Search structures"
          value={search}
          onInput={(e) => {
            setSearch(e.currentTarget.value)
            setPage(1)
          }}
        />
        <label class="check">
          <input type="checkbox" checked={deleted} onChange={(e) => setDeleted(e.currentTarget.checked)} />
          Deleted ones
        </label>
      </div>
      <AsyncView
        state={state}
        isEmpty={(d) => d.data.length === 0}
        empty={deleted ? "No deleted structures." : search !== "" ? "No structure matches." : "No structures yet: create the first one."}
      >
        {(list) => (
          <>
            <table class="table">
              <TableHead columns={["Name", "Slug", "Properties", "Mode", "Status", "Version", "Updated"]} />
              <tbody>
                {list.data.map((s) => (
                  <tr key={s.id}>
                    <td>
                      <a href={href("structures", s.id)}>{s.name}</a>
                    </td>
                    <td>
                      <code>{s.recordSlug}</code>
                    </td>
                    <td title={s.properties.map((p) => `${p.name}: ${p.type}`).join(", ")}>
                      {cellText(s.properties.map((p) => p.name).join(", "))}
                    </td>
                    <td>{s.schemaDiscoveryMode}</td>
                    <td>{s.isDeleted ? "deleted" : s.status}</td>
                    <td>{s.version}</td>
                    <td>{when(s.updatedAt)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
            <Pager page={page} pageSize={list.meta.pageSize} total={list.meta.total} onPage={setPage} />
          </>
        )}
      </AsyncView>
    </section>
  )
}

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

const StructureEditor = ({ id }: { id: string | undefined }) => {
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

const ignoredInDiff = ["updatedAt", "createdAt", "lastUpdatedBy", "version", "createdBy"]

const Versions = ({ structure }: { structure: Structure }) => {
  const { api } = useSession()
  const toast = useToast()
  const pin = useAction()
  const { state, reload } = useAsync(
    () => api.get<{ versions: ReadonlyArray<StructureVersion> }>(`/structures/${structure.id}/versions`),
    [structure.id, structure.version]
  )
  const [from, setFrom] = useState<number | undefined>(undefined)
  const [to, setTo] = useState<number | undefined>(undefined)
  return (
    <AsyncView
      state={state}
      isEmpty={(d) => d.versions.length === 0}
      empty={
        structure.enableVersioning
          ? "No versions kept."
          : 'Versioning is off for this structure: turn on "Keep versions" to record each change.'
      }
    >
      {({ versions }) => {
        const newest = versions[0]!.version
        const left = versions.find((v) => v.version === (from ?? versions[1]?.version ?? newest))
        const right = versions.find((v) => v.version === (to ?? newest))
        const changes = left !== undefined && right !== undefined ? jsonDiff(left.definition, right.definition, ignoredInDiff) : []
        return (
          <div class="versions">
            <ErrorBox error={pin.error} />
            <table class="table">
              <TableHead columns={["Version", "Saved", "Properties", "Pinned", ""]} />
              <tbody>
                {versions.map((v) => (
                  <tr key={v.version}>
                    <td>{v.version}</td>
                    <td>{when(v.createdAt)}</td>
                    <td>{v.definition.properties.length}</td>
                    <td>{v.pinned ? "📌 pinned" : ""}</td>
                    <td>
                      <Button
                        perm="write:structures"
                        onClick={() =>
                          void pin.run(async () => {
                            await api.post(`/structures/${structure.id}/versions/${v.version}/${v.pinned ? "unpin" : "pin"}`)
                            toast(`Version ${v.version} ${v.pinned ? "unpinned" : "pinned"}`)
                            reload()
                          })
                        }
                      >
                        {v.pinned ? "Unpin" : "Pin"}
                      </Button>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
            <h3>Compare</h3>
            <div class="toolbar">
              <Field label="From">
                <select value={String(left?.version)} onChange={(e) => setFrom(Number(e.currentTarget.value))}>
                  {versions.map((v) => (
                    <option key={v.version} value={v.version}>
                      v{v.version}
                    </option>
                  ))}
                </select>
              </Field>
              <Field label="To">
                <select value={String(right?.version)} onChange={(e) => setTo(Number(e.currentTarget.value))}>
                  {versions.map((v) => (
                    <option key={v.version} value={v.version}>
                      v{v.version}
                    </option>
                  ))}
                </select>
              </Field>
            </div>
            {changes.length === 0 ? (
              <p class="state empty">No differences.</p>
            ) : (
              <table class="table diff">
                <TableHead columns={["Path", "Before", "After"]} />
                <tbody>
                  {changes.map((c, i) => (
                    <tr key={i} class={`diff-${c.kind}`}>
                      <td>
                        <code>{c.path}</code>
                      </td>
                      <td>{c.kind === "added" ? "—" : cellText(c.before)}</td>
                      <td>{c.kind === "removed" ? "—" : cellText(c.after)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            )}
          </div>
        )
      }}
    </AsyncView>
  )
}
