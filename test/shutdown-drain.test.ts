// SIGTERM with a request in flight on a kept-alive connection (as a load balancer's pool keeps them): the request is
// answered, with `Connection: close`, and the node exits 0 at once. Before platform/Drain.ts the answer kept the
// connection alive and the node waited for the client to leave it idle (5 s), or, under steady traffic on such
// connections, served on until it was killed, its shards handed over only when their locks expired.
import * as Http from "node:http"
import { afterAll, describe, expect, it } from "vitest"
import { startServer, type TestServer } from "./support/TestServer.ts"
import { sleep } from "./support/wait.ts"

describe("SIGTERM drain", () => {
  let server: TestServer | undefined
  afterAll(async () => {
    await server?.close()
  })

  it("answers the request in flight with Connection: close and exits 0 at once", { timeout: 120_000 }, async () => {
    server = await startServer()
    const token = await server.adminToken()
    const made = await server.request("POST", `${server.base}/structures`, {
      token,
      body: { name: "Drained", recordSlug: "drained", properties: [{ name: "n", type: "number" }] }
    })
    expect(made.status).toBeLessThan(300)
    const agent = new Http.Agent({ keepAlive: true, maxSockets: 1 })
    /** Sends a request; its body goes in two halves, the second when `rest` resolves (so it is in flight until then). */
    const send = (method: string, path: string, body?: unknown, rest: Promise<void> = Promise.resolve()) =>
      new Promise<{ status: number; connection: string | undefined }>((resolve, reject) => {
        const text = body === undefined ? undefined : JSON.stringify(body)
        const req = Http.request(
          {
            host: "127.0.0.1",
            port: server!.port,
            path,
            method,
            agent,
            headers: {
              authorization: `Bearer ${token}`,
              ...(text === undefined ? {} : { "content-type": "application/json", "content-length": Buffer.byteLength(text) })
            }
          },
          (res) => {
            res.resume()
            res.on("end", () => resolve({ status: res.statusCode ?? 0, connection: res.headers.connection }))
          }
        )
        req.on("error", reject)
        if (text === undefined) return void req.end()
        req.write(text.slice(0, text.length >> 1))
        void rest.then(() => req.end(text.slice(text.length >> 1)))
      })
    // the connection is kept alive
    expect((await send("GET", "/health")).connection).toBe("keep-alive")
    // a request in flight on that connection at SIGTERM: its body's second half is sent only after the signal
    const records = Array.from({ length: 1000 }, (_, n) => ({ data: { n } }))
    const bulk = { structureId: "drained", records, options: { atomic: true } }
    let signalled!: () => void
    const inFlight = send("POST", `${server.base}/records/bulk`, bulk, new Promise<void>((resolve) => (signalled = resolve)))
    await sleep(100)
    const at = Date.now()
    const exited = server.stop("SIGTERM")
    await sleep(200)
    signalled()
    const answer = await inFlight
    const code = await exited
    agent.destroy()
    expect(answer.status).toBe(201)
    expect(answer.connection).toBe("close")
    expect(code).toBe(0)
    // not held by the idle kept-alive connection (keepAliveTimeout, 5 s)
    expect(Date.now() - at).toBeLessThan(4_000)
  })
})
