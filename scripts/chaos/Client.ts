// The chaos client: HTTP over node:http keep-alive agents to every node of the cluster. A request whose connection
// is refused or reset (the node is dead, or its listener closed while it drains) moves on to the next node; any
// answer, whatever its status, is returned to the caller. Every answer is counted in the phase it arrived in, and
// every 5xx is kept with its node, route and body for the report.
import * as Http from "node:http"

export interface NodeSlot {
  readonly name: string
  readonly baseUrl: string
  readonly agent: Http.Agent
}

export interface Answer {
  readonly status: number
  readonly body: any
  readonly text: string
  readonly node: string
  /** connections refused or reset before this answer */
  readonly moved: number
}

export interface ServerError {
  readonly at: number
  readonly phase: string
  readonly node: string
  readonly method: string
  readonly route: string
  readonly status: number
  readonly body: string
}

/** A transport failure: no HTTP answer at all. `retryable` when the connection was refused or reset. */
export class TransportError extends Error {
  readonly code: string
  readonly retryable: boolean
  readonly node: string
  constructor(code: string, retryable: boolean, node: string) {
    super(`${code} (${node})`)
    this.code = code
    this.retryable = retryable
    this.node = node
  }
}

const RETRYABLE = new Set(["ECONNREFUSED", "ECONNRESET", "EPIPE", "ECONNABORTED", "UND_ERR_SOCKET", "ENOTCONN"])

/** The route of a path, ids and keys replaced, for grouping 5xx. */
const routeOf = (path: string) => path.split("?")[0]!.replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi, ":id")

export interface Phases {
  current: string
  readonly counts: Map<string, { total: number; s5xx: number; transport: number; timeouts: number }>
  readonly serverErrors: Array<ServerError>
}

export const makePhases = (): Phases => ({ current: "setup", counts: new Map(), serverErrors: [] })

const count = (phases: Phases) => {
  let c = phases.counts.get(phases.current)
  if (c === undefined) {
    c = { total: 0, s5xx: 0, transport: 0, timeouts: 0 }
    phases.counts.set(phases.current, c)
  }
  return c
}

export interface Client {
  readonly slots: Array<NodeSlot>
  /**
   * Sends the request to node `start` (modulo the number of slots), moving on to the next node after a refused or
   * reset connection, until `deadlineMs` has passed. A timeout or an exhausted deadline throws a TransportError.
   */
  readonly request: (
    method: string,
    path: string,
    options?: { body?: unknown; headers?: Record<string, string>; start?: number; timeoutMs?: number; deadlineMs?: number }
  ) => Promise<Answer>
}

const once = (slot: NodeSlot, method: string, path: string, headers: Record<string, string>, body: string | undefined, timeoutMs: number) =>
  new Promise<{ status: number; text: string }>((resolve, reject) => {
    const url = new URL(slot.baseUrl + path)
    const req = Http.request(
      {
        host: url.hostname,
        port: url.port,
        path: url.pathname + url.search,
        method,
        headers: body === undefined ? headers : { ...headers, "content-length": Buffer.byteLength(body).toString() },
        agent: slot.agent
      },
      (res) => {
        let text = ""
        res.setEncoding("utf8")
        res.on("data", (c) => (text += c))
        res.on("end", () => resolve({ status: res.statusCode ?? 0, text }))
        res.on("error", (e: NodeJS.ErrnoException) => reject(new TransportError(e.code ?? "ECONNRESET", true, slot.name)))
      }
    )
    req.setTimeout(timeoutMs, () => req.destroy(Object.assign(new Error("timeout"), { code: "TIMEOUT" })))
    req.on("error", (e: NodeJS.ErrnoException) => {
      const code = e.code ?? (e.message === "socket hang up" ? "ECONNRESET" : "UNKNOWN")
      reject(new TransportError(code, RETRYABLE.has(code) || e.message === "socket hang up", slot.name))
    })
    if (body !== undefined) req.write(body)
    req.end()
  })

export const makeClient = (slots: Array<NodeSlot>, token: string, phases: Phases): Client => ({
  slots,
  request: async (method, path, options = {}) => {
    const headers: Record<string, string> = { authorization: `Bearer ${token}`, ...options.headers }
    const body = options.body === undefined ? undefined : JSON.stringify(options.body)
    if (body !== undefined) headers["content-type"] = "application/json"
    const deadline = Date.now() + (options.deadlineMs ?? 15_000)
    let at = options.start ?? Math.floor(Math.random() * slots.length)
    let moved = 0
    for (;;) {
      const slot = slots[((at % slots.length) + slots.length) % slots.length]!
      try {
        const res = await once(slot, method, path, headers, body, options.timeoutMs ?? 30_000)
        const c = count(phases)
        c.total++
        if (res.status >= 500) {
          c.s5xx++
          phases.serverErrors.push({
            at: Date.now(),
            phase: phases.current,
            node: slot.name,
            method,
            route: routeOf(path),
            status: res.status,
            body: res.text.slice(0, 300)
          })
        }
        let parsed: any
        try {
          parsed = res.text.length > 0 ? JSON.parse(res.text) : undefined
        } catch {
          parsed = res.text
        }
        return { status: res.status, body: parsed, text: res.text, node: slot.name, moved }
      } catch (e) {
        const c = count(phases)
        if (!(e instanceof TransportError) || !e.retryable) {
          if (e instanceof TransportError && e.code === "TIMEOUT") c.timeouts++
          else c.transport++
          throw e
        }
        moved++
        at++
        if (Date.now() > deadline) {
          c.transport++
          throw e
        }
        // every node refused once: give the cluster a moment before the next round
        if (moved % slots.length === 0) await new Promise((r) => setTimeout(r, 50))
      }
    }
  }
})

export const makeSlot = (name: string, baseUrl: string): NodeSlot => ({
  name,
  baseUrl,
  agent: new Http.Agent({ keepAlive: true, maxSockets: 64 })
})
