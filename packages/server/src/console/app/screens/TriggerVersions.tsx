// A trigger's Versions tab: its stored versions, newest first, each with the changes from the one before.
import { jsonDiff } from "../lib/Diff.ts"
import type { Trigger } from "../lib/Types.ts"
import { useSession } from "../Session.tsx"
import { AsyncView, cellText, TableHead, useAsync, when } from "../Ui.tsx"

interface TriggerVersion {
  readonly version: number
  readonly name: string
  readonly functionId: string | null
  readonly triggerMetadata: Record<string, unknown>
  readonly createdAt: string
}

export const TriggerVersions = ({ trigger }: { trigger: Trigger }) => {
  const { api } = useSession()
  const { state } = useAsync(
    () => api.get<{ versions: ReadonlyArray<TriggerVersion> }>(`/function-triggers/${trigger.id}/versions`),
    [trigger.id, trigger.version]
  )
  return (
    <AsyncView state={state} isEmpty={(d) => d.versions.length === 0} empty="No versions.">
      {({ versions }) => (
        <table class="table">
          <TableHead columns={["Version", "Saved", "Changes from the one before"]} />
          <tbody>
            {versions.map((v, i) => {
              const before = versions[i + 1]
              const changes = before === undefined ? [] : jsonDiff(before, v, ["version", "createdAt", "createdBy"])
              return (
                <tr key={v.version}>
                  <td>{v.version}</td>
                  <td>{when(v.createdAt)}</td>
                  <td>
                    {before === undefined ? (
                      "created"
                    ) : (
                      <ul class="changes">
                        {changes.map((c, k) => (
                          <li key={k}>
                            <code>{c.path}</code>: {cellText(c.before)} → {cellText(c.after)}
                          </li>
                        ))}
                      </ul>
                    )}
                  </td>
                </tr>
              )
            })}
          </tbody>
        </table>
      )}
    </AsyncView>
  )
}
