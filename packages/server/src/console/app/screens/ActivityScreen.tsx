// Live activity: the workspace's server-sent events, read with fetch (the token in the Authorization header, never
// in the URL), filtered by structure and event, resumed after a drop with Last-Event-ID.
import { Fragment } from "preact"
import { useEffect, useRef, useState } from "preact/hooks"
import { ApiError, errorOf } from "../lib/ApiClient.ts"
import { makeSseParser } from "../lib/SseParser.ts"
import { useSession } from "../Session.tsx"
import { Empty, ErrorBox, href, Json, PageHead, TableHead } from "../Ui.tsx"

interface LiveEvent {
  readonly id: string | undefined
  readonly event: string
  readonly timestamp?: string
  readonly structure?: string
  readonly data?: { readonly record?: { readonly id?: string }; readonly runId?: string }
}

type Connection = "connecting" | "open" | "retrying" | "closed"

const keep = 200

export const ActivityScreen = () => {
  const { api } = useSession()
  const [structure, setStructure] = useState("")
  const [events, setEvents] = useState("")
  const [applied, setApplied] = useState({ structure: "", events: "" })
  const [received, setReceived] = useState<ReadonlyArray<LiveEvent>>([])
  const [connection, setConnection] = useState<Connection>("connecting")
  const [error, setError] = useState<unknown>(undefined)
  const [paused, setPaused] = useState(false)
  const [open, setOpen] = useState<string | undefined>(undefined)
  const lastId = useRef<string | undefined>(undefined)

  useEffect(() => {
    if (paused) {
      setConnection("closed")
      return
    }
    const abort = new AbortController()
    let stopped = false
    const connect = async (): Promise<void> => {
      let retry = 2000
      while (!stopped) {
        setConnection(lastId.current === undefined ? "connecting" : "retrying")
        try {
          const response = await api.stream(`/realtime/workspace/${encodeURIComponent(api.workspace)}/api/v1/events`, {
            query: { structure: applied.structure || undefined, events: applied.events || undefined },
            headers: { accept: "text/event-stream", ...(lastId.current === undefined ? {} : { "last-event-id": lastId.current }) },
            signal: abort.signal
          })
          if (!response.ok || response.body === null) {
            const text = await response.text()
            let body: unknown = text
            try {
              body = JSON.parse(text)
            } catch {
              // keep the text
            }
            const failure = errorOf(response.status, body, `The event stream answered ${response.status}`)
            setError(failure)
            if (response.status === 400 || response.status === 401 || response.status === 403) {
              setConnection("closed")
              return
            }
          } else {
            setError(undefined)
            setConnection("open")
            const parser = makeSseParser()
            const reader = response.body.pipeThrough(new TextDecoderStream()).getReader()
            for (;;) {
              const { done, value } = await reader.read()
              if (done) break
              for (const message of parser.push(value)) {
                let parsed: LiveEvent
                try {
                  parsed = { ...(JSON.parse(message.data) as LiveEvent), id: message.id }
                } catch {
                  continue
                }
                if (parsed.event === "stream.closed") {
                  const reason = parsed as unknown as { reason?: string; message?: string }
                  setError(new ApiError(reason.message ?? "The server closed the stream", 0, String(reason.reason ?? "stream.closed")))
                  setConnection("closed")
                  stopped = true
                  abort.abort()
                  return
                }
                if (message.id !== undefined) lastId.current = message.id
                setReceived((list) => [parsed, ...list].slice(0, keep))
              }
            }
            retry = parser.retry() ?? retry
          }
        } catch (e) {
          if (abort.signal.aborted) return
          setError(e)
        }
        if (stopped) return
        setConnection("retrying")
        await new Promise((r) => setTimeout(r, retry))
      }
    }
    void connect()
    return () => {
      stopped = true
      abort.abort()
    }
  }, [applied, paused])

  return (
    <section>
      <PageHead title="Live activity">
        <span class={`badge badge-${connection}`} data-testid="connection">
          {connection}
        </span>
        <button type="button" class="btn btn-plain" onClick={() => setPaused(!paused)}>
          {paused ? "Resume" : "Pause"}
        </button>
        <button type="button" class="btn btn-plain" onClick={() => setReceived([])}>
          Clear
        </button>
      </PageHead>
      <form
        class="toolbar"
        onSubmit={(e) => {
          e.preventDefault()
          lastId.current = undefined
          setReceived([])
          setApplied({ structure: structure.trim(), events: events.trim() })
        }}
      >
        <input
          aria-label="Structures"
          placeholder="structures: books,authors"
          value={structure}
          onInput={(e) => setStructure(e.currentTarget.value)}
        />
        <input
          aria-label="Events"
          placeholder="events: record.created,function.*"
          value={events}
          onInput={(e) => setEvents(e.currentTarget.value)}
        />
        <button type="submit" class="btn btn-plain">
          Apply
        </button>
      </form>
      <ErrorBox error={error} />
      {received.length === 0 ? (
        <Empty>
          Waiting for events{applied.structure !== "" || applied.events !== "" ? " matching the filter" : ""}: changes made now appear here.
        </Empty>
      ) : (
        <table class="table" data-testid="activity">
          <TableHead columns={["When", "Event", "Structure", "Subject", ""]} />
          <tbody>
            {received.map((e, i) => {
              const key = e.id ?? String(i)
              const recordId = e.data?.record?.id
              return (
                <Fragment key={key}>
                  <tr>
                    <td>{e.timestamp === undefined ? "" : new Date(e.timestamp).toLocaleTimeString()}</td>
                    <td>
                      <code>{e.event}</code>
                    </td>
                    <td>{e.structure ?? ""}</td>
                    <td>
                      {recordId !== undefined && e.structure !== undefined && (
                        <a href={href("records", e.structure, recordId)}>
                          <code>{recordId.slice(0, 8)}</code>
                        </a>
                      )}
                      {e.data?.runId !== undefined && (
                        <a href={href("runs", e.data.runId)}>
                          run <code>{e.data.runId.slice(0, 8)}</code>
                        </a>
                      )}
                    </td>
                    <td>
                      <button type="button" class="btn btn-plain" onClick={() => setOpen(open === key ? undefined : key)}>
                        {open === key ? "Hide" : "JSON"}
                      </button>
                    </td>
                  </tr>
                  {open === key && (
                    <tr>
                      <td colSpan={5}>
                        <Json value={e} />
                      </td>
                    </tr>
                  )}
                </Fragment>
              )
            })}
          </tbody>
        </table>
      )}
    </section>
  )
}
