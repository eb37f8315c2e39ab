import { describe, expect, it } from "@effect/vitest"
import * as Http from "node:http"
import type * as Net from "node:net"
import { draining } from "./Drain.ts"

interface Answer {
  readonly status: number
  readonly connection: string | undefined
}

const get = (port: number, agent: Http.Agent, path = "/") =>
  new Promise<Answer>((resolve, reject) => {
    Http.get({ host: "127.0.0.1", port, path, agent }, (res) => {
      res.resume()
      res.on("end", () => resolve({ status: res.statusCode ?? 0, connection: res.headers.connection }))
    }).on("error", reject)
  })

/** A draining server whose `/slow` answers when `release` is called. */
const serve = async () => {
  let release = () => {}
  const slow = new Promise<void>((r) => (release = r))
  const server = new (draining(Http.Server))((req, res) => {
    if (req.url === "/slow") void slow.then(() => res.end("slow"))
    else res.end("ok")
  })
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r))
  return { server, port: (server.address() as Net.AddressInfo).port, release }
}

describe("draining", () => {
  it("closes a busy keep-alive connection after its request instead of waiting for the client", async () => {
    const { server, port, release } = await serve()
    const agent = new Http.Agent({ keepAlive: true, maxSockets: 1 })
    const first = await get(port, agent)
    expect(first.connection).toBe("keep-alive")
    // a request in flight on the kept-alive connection when the drain starts
    const inFlight = get(port, agent, "/slow")
    await new Promise((r) => setTimeout(r, 50))
    const closed = new Promise<number>((resolve) => {
      const at = performance.now()
      server.close(() => resolve(performance.now() - at))
    })
    release()
    const answer = await inFlight
    expect(answer.status).toBe(200)
    expect(answer.connection).toBe("close")
    // the listener is closed and so is the last connection: close completes at once, not after keepAliveTimeout
    expect(await closed).toBeLessThan(1000)
    agent.destroy()
  })

  it("closes idle keep-alive connections at once", async () => {
    const { server, port } = await serve()
    const agent = new Http.Agent({ keepAlive: true })
    await get(port, agent)
    const at = performance.now()
    await new Promise<void>((r) => server.close(() => r()))
    expect(performance.now() - at).toBeLessThan(1000)
    agent.destroy()
  })
})
