// A structure's Versions tab: its stored versions with pin and unpin, and the differences between any two of them.
import { useState } from "preact/hooks"
import { jsonDiff } from "../lib/Diff.ts"
import type { Structure, StructureVersion } from "../lib/Types.ts"
import { useSession } from "../Session.tsx"
import { AsyncView, Button, cellText, ErrorBox, Field, TableHead, useAction, useAsync, useToast, when } from "../Ui.tsx"

const ignoredInDiff = ["updatedAt", "createdAt", "lastUpdatedBy", "version", "createdBy"]

export const Versions = ({ structure }: { structure: Structure }) => {
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
