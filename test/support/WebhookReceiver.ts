// A real webhook receiver for end-to-end tests: node:http on 127.0.0.1, recording every request with its raw body.
import * as Crypto from "node:crypto"
import * as Http from "node:http"
import type * as Net from "node:net"
import { sleep } from "./wait.ts"

export interface Hit {
  readonly method: string
  readonly path: string
  readonly headers: Http.IncomingHttpHeaders
  /** the raw body, exactly as received */
  readonly body: string
  readonly json: any
  /** performance.now() when the body had arrived */
  readonly at: number
}

export interface Receiver {
  readonly url: string
  readonly hits: Array<Hit>
  /** sets the status (or a function of the hit and its 1-based number) the receiver answers with */
  answer: (hit: Hit, n: number) => number | Promise<number>
  readonly waitFor: (predicate: (hits: ReadonlyArray<Hit>) => boolean, timeoutMs?: number, what?: string) => Promise<void>
  readonly close: () => Promise<void>
}

export const startReceiver = async (answer: Receiver["answer"] = () => 200): Promise<Receiver> => {
  const hits: Array<Hit> = []
  const receiver = { answer } as Receiver
  const server = Http.createServer((req, res) => {
    let body = ""
    req.setEncoding("utf8")
    req.on("data", (c) => (body += c))
    req.on("end", () => {
      let json: any
      try {
        json = JSON.parse(body)
      } catch {
        json = undefined
      }
      const hit: Hit = { method: req.method ?? "", path: req.url ?? "", headers: req.headers, body, json, at: performance.now() }
      hits.push(hit)
      Promise.resolve(receiver.answer(hit, hits.length)).then(
        (status) => res.writeHead(status, { "content-type": "text/plain" }).end("ok"),
        () => res.writeHead(500).end()
      )
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()))
  const url = `http://127.0.0.1:${(server.address() as Net.AddressInfo).port}`
  return Object.assign(receiver, {
    url,
    hits,
    waitFor: async (predicate: (hits: ReadonlyArray<Hit>) => boolean, timeoutMs = 20_000, what = "webhook hits") => {
      const deadline = Date.now() + timeoutMs
      while (!predicate(hits)) {
        if (Date.now() > deadline) {
          throw new Error(`timed out waiting for ${what}; got ${hits.length}: ${JSON.stringify(hits.map((h) => h.json?.event))}`)
        }
        await sleep(25)
      }
    },
    close: () => {
      server.closeAllConnections()
      return new Promise<void>((resolve) => server.close(() => resolve()))
    }
  })
}

/** The hex HMAC-SHA256 `x-troupe-signature` value a receiver expects for `body`. */
export const troupeSignature = (secret: string, body: string) => `sha256=${Crypto.createHmac("sha256", secret).update(body).digest("hex")}`

/** Standard Webhooks verification, as the reference libraries do it (whsec_ secrets are base64 keys). */
export const verifyStandardWebhook = (secret: string, headers: Http.IncomingHttpHeaders, body: string): boolean => {
  const key = secret.startsWith("whsec_") ? Buffer.from(secret.slice(6), "base64") : Buffer.from(secret, "utf8")
  const signed = `${headers["webhook-id"]}.${headers["webhook-timestamp"]}.${body}`
  const expected = `v1,${Crypto.createHmac("sha256", key).update(signed).digest("base64")}`
  return String(headers["webhook-signature"] ?? "")
    .split(" ")
    .includes(expected)
}
