// One webhook HTTP POST over node:http(s), with keep-alive agents, a whole-exchange timeout and (in production) a
// DNS lookup that refuses private addresses at connect time. Never fails: every outcome is a `PostResult`.
import { Effect } from "effect"
import * as Dns from "node:dns"
import * as Http from "node:http"
import * as Https from "node:https"
import type * as Net from "node:net"
import { isPrivateAddress } from "./UrlPolicy.ts"

export interface PostResult {
  /** a 2xx answer */
  readonly ok: boolean
  /** the HTTP status, null when no answer arrived */
  readonly status: number | null
  /** why it failed (transport error, timeout or `HTTP <status>`), null on success */
  readonly error: string | null
  readonly durationMs: number
  /** the answer's body as text, cut at 64 KiB (SMS providers answer their message id or their reason in it) */
  readonly body: string
}

const agentOptions = { keepAlive: true, maxSockets: 256, maxFreeSockets: 64 }
const httpAgent = new Http.Agent(agentOptions)
const httpsAgent = new Https.Agent(agentOptions)

/** Answers larger than this are cut off: only the status matters. */
const MAX_RESPONSE_BYTES = 64 * 1024

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | Array<Dns.LookupAddress>, family?: number) => void

/** A DNS lookup that refuses names resolving to any private address (the production SSRF guard). */
export const guardedLookup = (hostname: string, options: Dns.LookupOptions, callback: LookupCallback) => {
  Dns.lookup(hostname, { ...options, all: true }, (err, addresses) => {
    if (err) return callback(err, "", 0)
    const list = addresses as Array<Dns.LookupAddress>
    const refused = list.find((a) => isPrivateAddress(a.address))
    if (refused !== undefined) {
      const e: NodeJS.ErrnoException = new Error(`${hostname} resolves to a private address (${refused.address})`)
      e.code = "EPRIVATE"
      return callback(e, "", 0)
    }
    if (options.all) return callback(null, list)
    const first = list[0]
    return first ? callback(null, first.address, first.family) : callback(new Error(`${hostname} has no address`), "", 0)
  })
}

interface Attempt {
  readonly status: number | null
  readonly statusText: string
  readonly error: string | null
  readonly reused: boolean
  readonly body: string
}

const once = (
  url: URL,
  body: string,
  headers: Record<string, string>,
  timeoutMs: number,
  allowPrivate: boolean,
  signal: AbortSignal
): Promise<Attempt> =>
  new Promise((resolve) => {
    const client = url.protocol === "https:" ? Https : Http
    let settled = false
    let reused = false
    const chunks: Array<Buffer> = []
    const finish = (a: Omit<Attempt, "reused" | "body">) => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      resolve({ ...a, reused, body: Buffer.concat(chunks).toString("utf8") })
    }
    const req = client.request(
      url,
      {
        method: "POST",
        headers: { ...headers, "content-length": String(Buffer.byteLength(body)) },
        agent: url.protocol === "https:" ? httpsAgent : httpAgent,
        signal,
        ...(allowPrivate ? {} : { lookup: guardedLookup as unknown as Net.LookupFunction })
      },
      (res) => {
        let size = 0
        const status = res.statusCode ?? 0
        const done = () => finish({ status, statusText: res.statusMessage ?? "", error: null })
        res.on("data", (chunk: Buffer) => {
          size += chunk.length
          if (size <= MAX_RESPONSE_BYTES) chunks.push(chunk)
          if (size > MAX_RESPONSE_BYTES) {
            done()
            res.destroy()
          }
        })
        res.on("end", done)
        res.on("error", done)
        res.on("close", done)
      }
    )
    const timer = setTimeout(() => {
      finish({ status: null, statusText: "", error: `timed out after ${Math.round(timeoutMs / 100) / 10} s` })
      req.destroy()
    }, timeoutMs)
    req.on("socket", () => {
      reused = (req as unknown as { reusedSocket?: boolean }).reusedSocket === true
    })
    req.on("error", (e: NodeJS.ErrnoException) => finish({ status: null, statusText: "", error: e.message || String(e.code) }))
    req.end(body)
  })

/** POSTs `body` to `url`; 2xx is success. A kept-alive socket the receiver had just closed is retried once. */
export const post = (
  url: string,
  body: string,
  headers: Record<string, string>,
  options: { readonly timeoutMs: number; readonly allowPrivate: boolean }
): Effect.Effect<PostResult> =>
  Effect.gen(function* () {
    if (!URL.canParse(url)) return { ok: false, status: null, error: "invalid url", durationMs: 0, body: "" }
    const target = new URL(url)
    if (!options.allowPrivate && isPrivateAddress(target.hostname)) {
      return { ok: false, status: null, error: "url points to a private address", durationMs: 0, body: "" }
    }
    const start = performance.now()
    const send = Effect.tryPromise({
      try: (signal) => once(target, body, headers, options.timeoutMs, options.allowPrivate, signal),
      catch: (e) => e
    })
    let attempt = yield* send
    if (attempt.status === null && attempt.reused) attempt = yield* send
    const durationMs = Math.round((performance.now() - start) * 100) / 100
    const ok = attempt.status !== null && attempt.status >= 200 && attempt.status < 300
    const error = ok ? null : (attempt.error ?? `HTTP ${attempt.status}${attempt.statusText ? ` ${attempt.statusText}` : ""}`)
    return { ok, status: attempt.status, error, durationMs, body: attempt.body }
  }).pipe(Effect.catch((e) => Effect.succeed({ ok: false, status: null, error: String(e), durationMs: 0, body: "" })))
