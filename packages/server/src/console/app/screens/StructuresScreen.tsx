// Structures: the list (search, deleted ones), create and edit with every property rule, a live
// POST /structures/validate as the user types, versions with pins and a diff between any two.
// The editor is in StructureEditor.tsx, the Versions tab in StructureVersions.tsx.
import { useState } from "preact/hooks"
import type { StructureList } from "../lib/Types.ts"
import { useSession } from "../Session.tsx"
import { AsyncView, Button, cellText, href, navigate, PageHead, Pager, TableHead, useAsync, when } from "../Ui.tsx"
import { StructureEditor } from "./StructureEditor.tsx"

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
