// Events across a two-node cluster on PostgreSQL: SSE subscribers on either node see writes made through either
// node, and every committed event is still delivered to a webhook when the node that owns the events singleton is
// SIGKILLed mid-stream (the other node takes the singleton over, including deliveries that were mid-retry).
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { openSse, type SseConnection } from "./support/SseClient.ts"
import { startServer, type TestNode, type TestServer } from "./support/TestServer.ts"
import { startReceiver } from "./support/WebhookReceiver.ts"
import { sleep } from "./support/wait.ts"

const RUNNING = "events: outbox relay and webhook dispatcher running on this node"
const STOPPED = "events: outbox relay and webhook dispatcher stopped on this node"

/** The node currently running the events singleton, judged by the last of its start/stop log lines. */
const owner = (nodes: ReadonlyArray<TestNode>): TestNode | undefined => {
  const running = nodes.filter((n) => {
    const out = n.output()
    return out.lastIndexOf(RUNNING) > out.lastIndexOf(STOPPED)
  })
  return running.length === 1 ? running[0] : undefined
}

describe.runIf(process.env.DATABASE_URL)("events across two nodes", () => {
  let a: TestServer
  let b: TestNode
  let token: string
  const sse: Array<SseConnection> = []
  // one issuer for the whole cluster, as behind a load balancer, so either node accepts the other's tokens
  // info: the test reads which node runs the singleton off its log lines
  const env = { TROUPE_WEBHOOK_RETRY_DELAYS: "0.2,0.4,0.6", TROUPE_PUBLIC_URL: "http://troupe.test", TROUPE_LOG_LEVEL: "info" }

  beforeAll(async () => {
    a = await startServer({ clustered: true, env })
    b = await a.startPeer()
    token = await a.adminToken()
    const res = await a.request("POST", `${a.base}/structures`, {
      token,
      body: { name: "items", recordSlug: "items", properties: [{ name: "n", type: "number" }] }
    })
    expect(res.status, JSON.stringify(res.body)).toBeLessThan(300)
  })
  afterAll(async () => {
    for (const c of sse) c.close()
    await a?.close()
  })

  /** Creates a record through `node`, retrying while the cluster moves shards; undefined if it never succeeded. */
  const write = async (node: TestNode, n: number, deadline = Date.now() + 60_000): Promise<string | undefined> => {
    while (Date.now() < deadline) {
      try {
        const res = await node.request("POST", `${a.base}/structures/items/records`, { token, body: { n } })
        if (res.status === 201 || res.status === 200) return res.body.id as string
      } catch {
        // the node is gone
        return undefined
      }
      await sleep(200)
    }
    return undefined
  }

  it("an SSE subscriber on either node receives writes made through either node", async () => {
    const url = (node: TestNode) => `${node.baseUrl}/realtime/workspace/${a.workspace}/api/v1/events?structure=items`
    const onA = await openSse(url(a), { authorization: `Bearer ${token}` })
    const onB = await openSse(url(b), { authorization: `Bearer ${token}` })
    sse.push(onA, onB)
    expect(onA.status).toBe(200)
    expect(onB.status).toBe(200)
    await sleep(200)
    const viaA = await write(a, 1)
    const viaB = await write(b, 2)
    for (const c of [onA, onB]) {
      await c.waitFor((m) => [viaA, viaB].every((id) => m.some((x) => x.json.data.record.id === id)))
    }
    expect(onA.messages.map((m) => m.id)).toEqual(onB.messages.map((m) => m.id))
  })

  it("delivers every committed event at least once when the singleton's node is SIGKILLed mid-stream", async () => {
    // each delivery fails its first attempt, so retries are in flight when the node dies
    const attempts = new Map<string, number>()
    const rx = await startReceiver((hit) => {
      const id = String(hit.headers["x-troupe-delivery"])
      const n = (attempts.get(id) ?? 0) + 1
      attempts.set(id, n)
      return n === 1 ? 500 : 200
    })
    // record ids whose delivery got a 2xx (a second attempt was made, and every second attempt succeeds)
    const delivered = () =>
      new Set(rx.hits.filter((h) => attempts.get(String(h.headers["x-troupe-delivery"]))! >= 2).map((h) => h.json?.data?.recordId))
    try {
      const hook = await a.request("POST", `${a.base}/webhooks`, {
        token,
        body: { url: `${rx.url}/kill`, events: ["record.created"], filters: { structure: "items" } }
      })
      expect(hook.status).toBe(201)

      let current: TestNode | undefined
      const found = Date.now() + 30_000
      while ((current = owner([a, b])) === undefined && Date.now() < found) await sleep(200)
      expect(current, "one node runs the events singleton").toBeDefined()
      const victim = current!
      const survivor = victim === a ? b : a

      const committed: Array<string> = []
      for (let i = 0; i < 12; i++) {
        const id = await write(i % 2 === 0 ? victim : survivor, 100 + i)
        if (id) committed.push(id)
      }
      await victim.stop("SIGKILL")
      for (let i = 12; i < 24; i++) {
        const id = await write(survivor, 100 + i)
        if (id) committed.push(id)
      }
      expect(committed.length).toBeGreaterThanOrEqual(18)

      await rx.waitFor(() => committed.every((id) => delivered().has(id)), 120_000, "every committed record delivered")
      expect(owner([survivor])).toBe(survivor)
    } finally {
      await rx.close()
    }
  }, 240_000)
})
