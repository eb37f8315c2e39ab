/**
 * The workspace's server-sent events (`GET /realtime/workspace/{ws}/api/v1/events`), each message parsed into a typed
 * `TroupeEvent`, on one of two EventSources:
 * - in Node (no EventSource of its own), or whenever `fetch` is given: the `eventsource` package, with a custom fetch
 *   so the token travels as an `Authorization: Bearer` header (never in the URL);
 * - in a browser: the browser's own `EventSource`, which cannot send headers, so the token travels as
 *   `?access_token=` (CONTRACT §9; the server keeps query strings out of its logs). Cross-origin, the node must
 *   allow the page's origin (docs/browser.md).
 * The token is asked from the token source at every (re)connection.
 *
 * Reconnection: when a stream ends, EventSource reconnects by itself after the server's `retry:` (2 s) and sends
 * `Last-Event-ID`, so the server replays what came after the last event received, without gaps or repeats. When
 * a connection is refused (401 after a token expired, 429, 5xx, a network error), EventSource gives up; this
 * helper then opens a new one after a growing delay (1 s, 2 s, ... 30 s), resuming after the last event received
 * (`Last-Event-ID`, or `?lastEventId=` for the browser's EventSource), after invalidating the token source on a 401
 * (the browser's EventSource does not say which status refused it: its token source is asked again, and renews a
 * token that is about to expire).
 *
 * ```ts
 * const sub = subscribeEvents({ baseUrl, workspace: "default", token, events: ["record.*"],
 *   onEvent: (e) => console.log(e.event, e.id) })
 * sub.close()
 * ```
 *
 * @since 0.1.0
 */
import type { FetchLike } from "eventsource"
import { FetchEventSource } from "./FetchEventSource.ts"
import { type TokenInput, toTokenSource } from "./TokenSource.ts"

/** A record event's `data`. @category models */
export interface RecordEventData {
  readonly record: {
    readonly id: string
    readonly structureId: string
    readonly data: Record<string, unknown>
    readonly version?: number
  }
  readonly previous: { readonly data: Record<string, unknown> } | null
  readonly changes?: Record<string, { readonly old: unknown; readonly new: unknown }>
  readonly metadata?: { readonly userId?: string | null; readonly source?: string }
}

/** A bulk event's `data`. @category models */
export interface BulkEventData {
  readonly structure: string
  readonly count: number
  readonly recordIds: ReadonlyArray<string>
}

/** `function.completed` / `function.failed`. @category models */
export interface FunctionEventData {
  readonly runId: string
  readonly functionId: string | null
  readonly triggerId: string | null
  readonly status: string
  readonly durationMs: number | null
  readonly executionSource: string
  readonly error?: string | null
}

/** `trigger.fired`. @category models */
export interface TriggerFiredData {
  readonly triggerId: string
  readonly triggerName: string
  readonly executionType: string
  readonly functionId: string
  readonly runId: string
  readonly executionSource: string
  readonly scheduledFor?: string | null
}

interface Envelope<Name extends string, Data> {
  /** the event id: the `Last-Event-ID` to resume after it */
  readonly id: string
  readonly event: Name
  readonly workspace: string
  readonly timestamp: string
  /** the structure's slug, when the event concerns one */
  readonly structure: string | null
  readonly data: Data
}

/** Record event names. @category models */
export type RecordEventName =
  | "record.created"
  | "record.updated"
  | "record.deleted"
  | "record.restored"
  | "record.reverted"
  | "record.expired"

/** One event of the workspace, discriminated by `event`. @category models */
export type TroupeEvent =
  | Envelope<RecordEventName, RecordEventData>
  | Envelope<"record.bulk.created" | "record.bulk.updated" | "record.bulk.deleted", BulkEventData>
  | Envelope<"function.completed" | "function.failed", FunctionEventData>
  | Envelope<"trigger.fired", TriggerFiredData>

/** The last message of a stream the server ended (`token_expired`, `access_revoked`, `permission_removed`). @category models */
export interface StreamClosed {
  readonly event: "stream.closed"
  readonly reason: string
  readonly message?: string
}

/** @category models */
export interface SubscribeOptions {
  /** Troupe's origin, e.g. `http://localhost:8080` */
  readonly baseUrl: string
  readonly workspace: string
  /** a fixed token, a function answering one, or a `TokenSource`; asked at every (re)connection */
  readonly token: TokenInput
  /** event names or families (`record.*`, `function.*`, `trigger.fired`); all when omitted */
  readonly events?: ReadonlyArray<string> | undefined
  /** structure slugs or ids */
  readonly structures?: ReadonlyArray<string> | undefined
  /** resume after this event id (`"0"`: everything still kept) */
  readonly lastEventId?: string | undefined
  readonly onEvent: (event: TroupeEvent) => void
  /** a connection failed or was refused; the helper reconnects unless `fatal` */
  readonly onError?: ((error: SubscriptionError) => void) | undefined
  /** a connection is open */
  readonly onOpen?: (() => void) | undefined
  /** the fetch to use (default: the global one); given, the token travels as a header on the `eventsource` package */
  readonly fetch?: typeof globalThis.fetch | undefined
  /** the longest wait between two reconnection attempts after a refusal (default 30000 ms) */
  readonly maxRetryDelayMs?: number | undefined
  /**
   * An EventSource class that takes the URL alone (the token then travels as `?access_token=`); default: the
   * runtime's own (`globalThis.EventSource`, as browsers have) when there is one and no `fetch` is given.
   */
  readonly EventSource?: EventSourceClass | undefined
}

/** What the helper uses of an EventSource. @category models */
export interface EventSourceLike {
  readonly readyState: number
  onopen: ((event: any) => void) | null
  onmessage: ((message: { readonly data: string; readonly lastEventId: string }) => void) | null
  onerror: ((event: { readonly code?: number | undefined; readonly message?: string | undefined }) => void) | null
  close(): void
}

/** An EventSource constructor that takes the URL alone, as the browser's. @category models */
export type EventSourceClass = new (url: string) => EventSourceLike

/** The readyState of an EventSource that gave up. */
const CLOSED = 2

/** @category errors */
export class SubscriptionError extends Error {
  override readonly name = "SubscriptionError"
  constructor(
    message: string,
    /** HTTP status of a refused connection, when there was one */
    readonly status: number | undefined,
    /** true when the helper stopped for good (access revoked or permission removed) */
    readonly fatal: boolean
  ) {
    super(message)
  }
}

/** @category models */
export interface Subscription {
  /** the id of the last event delivered (resume point) */
  readonly lastEventId: () => string | undefined
  /** stops the stream; no reconnection follows */
  readonly close: () => void
}

/** Parses one message's data; `undefined` for anything that is not an event object. @category parsing */
export const parseEvent = (data: string): TroupeEvent | StreamClosed | undefined => {
  let value: unknown
  try {
    value = JSON.parse(data)
  } catch {
    return undefined
  }
  if (typeof value !== "object" || value === null || typeof (value as { event?: unknown }).event !== "string") {
    return undefined
  }
  return value as TroupeEvent | StreamClosed
}

/** The stream's URL (filters in the query, never the token). @category constructors */
export const eventsUrl = (options: Pick<SubscribeOptions, "baseUrl" | "workspace" | "events" | "structures">) => {
  const url = new URL(`${options.baseUrl.replace(/\/+$/, "")}/realtime/workspace/${encodeURIComponent(options.workspace)}/api/v1/events`)
  if (options.events !== undefined && options.events.length > 0) url.searchParams.set("events", options.events.join(","))
  if (options.structures !== undefined && options.structures.length > 0) {
    url.searchParams.set("structure", options.structures.join(","))
  }
  return url
}

/**
 * Opens the workspace's event stream and keeps it open until `close()`.
 *
 * @category constructors
 */
export const subscribeEvents = (options: SubscribeOptions): Subscription => {
  const tokens = toTokenSource(options.token)
  const doFetch = options.fetch ?? globalThis.fetch
  const maxDelay = options.maxRetryDelayMs ?? 30_000
  const url = eventsUrl(options)
  const native =
    options.EventSource ??
    (options.fetch === undefined || FetchEventSource === undefined
      ? (globalThis as { EventSource?: EventSourceClass }).EventSource
      : undefined)
  let lastEventId = options.lastEventId
  let source: EventSourceLike | undefined
  let timer: ReturnType<typeof setTimeout> | undefined
  let closed = false
  let failures = 0
  let lastStatus: number | undefined

  const authFetch: FetchLike = async (input, init) => {
    const token = await tokens.getToken()
    const headers: Record<string, string> = { ...init.headers, authorization: `Bearer ${token}` }
    // a new EventSource does not know where the previous one stopped: tell the server
    if (lastEventId !== undefined && headers["Last-Event-ID"] === undefined) headers["Last-Event-ID"] = lastEventId
    const response = await doFetch(input, { ...init, headers })
    lastStatus = response.status
    return response
  }

  /** The browser's EventSource: the token (and where to resume) in the query, as it sends no headers of ours. */
  const openNative = async (Native: EventSourceClass) => {
    const token = await tokens.getToken()
    const withToken = new URL(url)
    withToken.searchParams.set("access_token", token)
    if (lastEventId !== undefined) withToken.searchParams.set("lastEventId", lastEventId)
    return new Native(withToken.toString())
  }

  const stop = () => {
    closed = true
    if (timer !== undefined) clearTimeout(timer)
    source?.close()
  }

  const retry = (status: number | undefined) => {
    if (status === 401) tokens.invalidate()
    failures++
    const delay = Math.min(maxDelay, 1000 * 2 ** Math.min(failures - 1, 10))
    timer = setTimeout(open, delay)
  }

  const attach = (es: EventSourceLike) => {
    if (closed) return es.close()
    source = es
    es.onopen = () => {
      failures = 0
      options.onOpen?.()
    }
    es.onmessage = (message) => {
      const parsed = parseEvent(message.data)
      if (parsed === undefined) return
      if (parsed.event === "stream.closed") {
        const closedBy = parsed as StreamClosed
        if (closedBy.reason === "token_expired") {
          // the stream ends; the next connection asks the source for a new token
          tokens.invalidate()
          return
        }
        stop()
        options.onError?.(new SubscriptionError(closedBy.message ?? `stream closed: ${closedBy.reason}`, undefined, true))
        return
      }
      if (message.lastEventId !== "") lastEventId = message.lastEventId
      options.onEvent(parsed as TroupeEvent)
    }
    es.onerror = (event) => {
      if (closed) return
      const status = event.code ?? (native === undefined && es.readyState === CLOSED ? lastStatus : undefined)
      options.onError?.(new SubscriptionError(event.message ?? "event stream error", status, false))
      // CONNECTING: EventSource retries by itself. CLOSED: it gave up (a refusal); start a new one.
      if (es.readyState !== CLOSED) return
      // the browser's own reconnection would resume from an older URL's lastEventId: close it for good
      es.close()
      retry(status)
    }
  }

  const open = () => {
    if (closed) return
    if (native === undefined) {
      if (FetchEventSource === undefined) throw new Error("subscribeEvents: this runtime has no EventSource; pass one in `EventSource`")
      return attach(new FetchEventSource(url, { fetch: authFetch }) as unknown as EventSourceLike)
    }
    openNative(native).then(attach, (error: unknown) => {
      if (closed) return
      const message = error instanceof Error ? error.message : String(error)
      // a token source that cannot give a token (a handed-in token gone): nothing to retry until the app signs in
      const fatal = (error as { error?: unknown }).error === "login_required"
      options.onError?.(new SubscriptionError(message, undefined, fatal))
      if (fatal) stop()
      else retry(undefined)
    })
  }

  open()
  return { lastEventId: () => lastEventId, close: stop }
}

/**
 * The same stream as an async iterator: `for await (const event of eventStream(options)) ...`; leaving the loop
 * closes it. Errors that are not fatal are retried silently; a fatal one ends the loop with that error.
 *
 * @category constructors
 */
export async function* eventStream(options: Omit<SubscribeOptions, "onEvent" | "onError">): AsyncGenerator<TroupeEvent, void, undefined> {
  const queue: Array<TroupeEvent> = []
  let failure: SubscriptionError | undefined
  let wake: (() => void) | undefined
  const sub = subscribeEvents({
    ...options,
    onEvent: (event) => {
      queue.push(event)
      wake?.()
    },
    onError: (error) => {
      if (!error.fatal) return
      failure = error
      wake?.()
    }
  })
  try {
    while (true) {
      const next = queue.shift()
      if (next !== undefined) {
        yield next
        continue
      }
      if (failure !== undefined) throw failure
      await new Promise<void>((resolve) => {
        wake = resolve
      })
      wake = undefined
    }
  } finally {
    sub.close()
  }
}
