// The outbox survives a node killed while it sends: every message accepted before the SIGKILL ends `sent`, with its
// Message-ID (the same on every attempt) received by the SMTP server. On embedded PGlite the node restarts on the
// same data directory; on PostgreSQL the other node of a two-node cluster takes the messages over once the dead
// node's leases expire. Messages in flight at the kill may be delivered twice (at least once): the server sees the
// same Message-ID again.
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { passwordToken } from "./support/IdentityHelpers.ts"
import { type MailServer, startMailServer } from "./support/MailServer.ts"
import { startNode, startServer, type TestNode, type TestServer } from "./support/TestServer.ts"
import { eventually } from "./support/wait.ts"

const base = "/notification/workspace/default/api/v1"
const env = {
  TROUPE_NOTIFY_LEASE_SECONDS: "2",
  TROUPE_NOTIFY_CONCURRENCY: "2",
  TROUPE_NOTIFY_WORKSPACE_CONCURRENCY: "2",
  TROUPE_WEBHOOK_RETRY_DELAYS: "1,1,1"
}
const COUNT = 20

/** Configures the mail server, sends COUNT emails through `node`, waits for a few deliveries: the rest are queued. */
const sendBacklog = async (node: TestNode, token: string, mail: MailServer) => {
  const settings = await node.request("PUT", `${base}/settings`, { token, body: { email: { smtpUrl: mail.url, from: "ops@troupe.test" } } })
  expect(settings.status).toBe(200)
  const ids: Array<string> = []
  for (let i = 0; i < COUNT; i++) {
    const res = await node.request("POST", `${base}/email`, { token, body: { to: `u${i}@example.com`, subject: `m${i}`, text: "hello" } })
    expect(res.status).toBe(202)
    ids.push(res.body.id)
  }
  await mail.waitFor((a) => a.length >= 2, 60_000, "the first deliveries")
  return ids
}

/** Every message ends `sent` (read through `node`), and the server received each Message-ID. */
const allSent = async (node: TestNode, token: string, ids: ReadonlyArray<string>, mail: MailServer) => {
  for (const id of ids) {
    const message = await eventually(async () => {
      const res = await node.request("GET", `${base}/messages/${id}`, { token })
      return res.body?.status === "sent" || res.body?.status === "failed" ? res.body : undefined
    }, 90_000)
    expect(message.status, JSON.stringify(message)).toBe("sent")
    expect(mail.accepted().some((m) => m.messageId === message.messageId)).toBe(true)
  }
  expect(new Set(mail.accepted().map((m) => m.messageId)).size).toBe(COUNT)
}

describe.runIf(!process.env.DATABASE_URL)("notifications across a PGlite node restart", () => {
  const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "troupe-notify-restart-"))
  const password = "restart-pw-123456"
  const nodeEnv = { ...env, DATABASE_URL: "", TROUPE_DATA_DIR: dir, TROUPE_ADMIN_PASSWORD: password }
  let node: TestNode | undefined
  let mail: MailServer | undefined

  afterAll(async () => {
    await node?.stop()
    await mail?.close()
    Fs.rmSync(dir, { recursive: true, force: true })
  })

  it("sends every queued message after SIGKILL and restart", async () => {
    mail = await startMailServer()
    mail.delayMs = 400
    node = await startNode(nodeEnv)
    const ids = await sendBacklog(node, await passwordToken(node, "admin", password), mail)
    await node.stop("SIGKILL")
    expect(mail.accepted().length).toBeLessThan(COUNT)
    mail.delayMs = 0
    node = await startNode(nodeEnv)
    await allSent(node, await passwordToken(node, "admin", password), ids, mail)
  }, 400_000)
})

describe.runIf(!!process.env.DATABASE_URL)("notifications when a node of a cluster dies", () => {
  let server: TestServer | undefined
  let mail: MailServer | undefined

  afterAll(async () => {
    await server?.close()
    await mail?.close()
  })

  it("the other node sends every message the dead node had queued or in hand", async () => {
    mail = await startMailServer()
    mail.delayMs = 400
    server = await startServer({ clustered: true, env })
    const other = await server.startPeer()
    const token = await server.adminToken()
    const ids = await sendBacklog(server, token, mail)
    await server.stop("SIGKILL")
    expect(mail.accepted().length).toBeLessThan(COUNT)
    mail.delayMs = 0
    await allSent(other, token, ids, mail)
  }, 400_000)
})
