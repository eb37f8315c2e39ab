// The buttons of an editor for a resource with drafts (functions, triggers): a new one is created or saved as a
// draft; a draft is saved, published (it becomes the resource) or deleted.
import type { Draft } from "../lib/Types.ts"
import { useSession } from "../Session.tsx"
import { Button, confirmed, navigate, type useAction, useToast } from "../Ui.tsx"

interface Props {
  /** the API's resource path and draft `resourceType` */
  readonly resource: "compute-functions" | "function-triggers"
  /** the console screen of that resource */
  readonly screen: "functions" | "triggers"
  readonly perm: string
  /** what "Create …" names */
  readonly noun: string
  readonly body: unknown
  /** the draft being edited, or undefined for a new resource */
  readonly draft: Draft | undefined
  readonly save: ReturnType<typeof useAction>
}

export const DraftActions = ({ resource, screen, perm, noun, body, draft, save }: Props) => {
  const { api } = useSession()
  const toast = useToast()
  if (draft === undefined) {
    return (
      <>
        <Button
          perm={perm}
          busy={save.busy}
          onClick={() =>
            void save.run(async () => {
              const d = await api.post<Draft>("/drafts", { resourceType: resource, data: body })
              toast("Draft saved")
              navigate(screen, "draft", d.id)
            })
          }
        >
          Save as draft
        </Button>
        <Button
          perm={perm}
          kind="primary"
          busy={save.busy}
          onClick={() =>
            void save.run(async () => {
              const created = await api.post<{ id: string; name: string }>(`/${resource}`, body)
              toast(`${noun[0]!.toUpperCase()}${noun.slice(1)} ${created.name} created`)
              navigate(screen, created.id)
            })
          }
        >
          Create {noun}
        </Button>
      </>
    )
  }
  return (
    <>
      <Button
        perm={perm}
        busy={save.busy}
        onClick={() =>
          void save.run(async () => {
            await api.put(`/drafts/${draft.id}`, { data: body })
            toast("Draft saved")
          })
        }
      >
        Save draft
      </Button>
      <Button
        perm={perm}
        kind="primary"
        busy={save.busy}
        onClick={() =>
          void save.run(async () => {
            await api.put(`/drafts/${draft.id}`, { data: body })
            const published = await api.post<{ id: string; name: string }>(`/${resource}/${draft.id}/publish`)
            toast(`Published as ${published.name}`)
            navigate(screen, published.id)
          })
        }
      >
        Publish
      </Button>
      <Button
        perm={perm}
        kind="danger"
        onClick={() =>
          confirmed("Delete this draft?") &&
          void save.run(async () => {
            await api.del(`/drafts/${draft.id}`)
            navigate(screen)
          })
        }
      >
        Delete draft
      </Button>
    </>
  )
}
