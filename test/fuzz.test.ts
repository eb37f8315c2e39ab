// The contract fuzzer's short profile (the long one is `npm run fuzz`): every operation of the HttpApi definition,
// each crossed with every request class (valid, mutated, garbage) and principal (owner, viewer, a token of another
// workspace, none), then owner-heavy random requests, against a fresh node; no 5xx, every 4xx in the contract body,
// no data changed by those who may not, the server up at the end. FUZZ_SEED replays a run; FUZZ_TEST_REQUESTS changes
// its length. Below it, the regressions of what the fuzzer found, each pinned by a plain request.
import * as Crypto from "node:crypto"
import * as Net from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { operations } from "./support/FuzzContract.ts"
import { formatFailure, formatReport } from "./support/FuzzReport.ts"
import { contractProblems, runFuzz } from "./support/FuzzRunner.ts"
import { sendRaw } from "./support/FuzzWire.ts"
import { fuzzServerEnv } from "./support/FuzzServer.ts"
import { startServer, type TestServer } from "./support/TestServer.ts"
import { sleep } from "./support/wait.ts"

const seed = process.env.FUZZ_SEED || Crypto.randomBytes(6).toString("hex")
// one sweep (every operation × 3 classes × 4 principals) and a quarter of one more, at random
const requests = Number(process.env.FUZZ_TEST_REQUESTS || operations().length * 15)

describe("contract fuzzer", () => {
  let server: TestServer
  beforeAll(async () => {
    server = await startServer({ env: fuzzServerEnv })
  })
  afterAll(async () => {
    await server?.close()
  })

  it(`short profile: every operation, class and principal (FUZZ_SEED=${seed})`, async () => {
    // a node of its own: its fixtures are named, so a retry (CI retries once) needs a database without the last try's
    const fresh = await startServer({ env: fuzzServerEnv })
    const report = await runFuzz(fresh, { seed, requests, concurrency: 8 }).finally(() => fresh.close())
    console.log(formatReport(report, false))
    const failures = report.failures.map(formatFailure).join("\n\n")
    expect(report.failureCount, `FUZZ_SEED=${seed}\n${failures}`).toBe(0)
    expect(report.perOperation.size).toBe(operations().length)
    for (const [op, stats] of report.perOperation) {
      for (const cls of ["valid", "mutated", "garbage"] as const) {
        for (const principal of ["owner", "viewer", "foreign", "anonymous"] as const) {
          expect(stats.classes[cls][principal], `${op} ${cls} ${principal}`).toBeGreaterThan(0)
        }
      }
    }
    expect(report.unprivilegedPhase.changed).toBe(0)
  }, 240_000)

  describe("found by the fuzzer", () => {
    const base = () => new URL(server.baseUrl)
    const raw = (text: string) => sendRaw(base(), { text, halfClose: false }, 5000)
    const contract = async (text: string, status: number) => {
      const outcome = await raw(text)
      expect(outcome.status, outcome.text).toBe(status)
      expect(contractProblems(status, outcome)).toEqual([])
      return outcome
    }

    it("what Node's HTTP parser refuses is answered in the contract body, not an empty one", async () => {
      await contract("GET /health HTTP/1.1\r\nHost: x\r\nNo colon here\r\n\r\n", 400)
      await contract(`GET /health?q=${"x".repeat(20_000)} HTTP/1.1\r\nHost: x\r\n\r\n`, 431)
      await contract("POST /oidc/token HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n", 400)
      await contract("GET /health HTTP/9.9 junk\r\n\r\n", 400)
    })

    it("an unknown Expect header (417) and an HTTP/1.1 request without Host (400) get the contract body", async () => {
      const expectation = await contract("GET /health HTTP/1.1\r\nHost: x\r\nExpect: x-unknown\r\n\r\n", 417)
      expect(JSON.parse(expectation.text).code).toBe("EXPECTATION_FAILED")
      await contract("GET /health HTTP/1.1\r\n\r\n", 400)
      // HTTP/1.0 needs no Host, and 100-continue is still honoured
      expect((await raw("GET /health HTTP/1.0\r\n\r\n")).status).toBe(200)
      const continued = await raw("GET /health HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n")
      expect(continued.status === 200 || continued.text.includes("HTTP/1.1 200 OK"), JSON.stringify(continued)).toBe(true)
    })

    it("a JSON-like content type HttpApi does not take: 415 in the contract body (was plain text)", async () => {
      const token = await server.adminToken()
      for (const type of ["application/vnd.api+json", "application/json, text/plain"]) {
        const res = await server.request("POST", `${server.base}/structures`, {
          token,
          raw: '{"name":"x","properties":[]}',
          headers: { "content-type": type }
        })
        expect(res.status, res.text).toBe(415)
        expect(res.body).toMatchObject({ statusCode: 415, code: "UNSUPPORTED_MEDIA_TYPE", details: [] })
        expect(res.body.message).toContain("Unsupported content-type")
        expect(res.body.requestId).toBe(res.headers.get("x-request-id"))
      }
    })

    it("a client gone while its request runs is no server error: nothing logged as a failed request", async () => {
      // a receiver that never answers keeps POST /webhooks/{id}/test running while the client goes away
      const silent = Net.createServer(() => {})
      await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", () => resolve()))
      const token = await server.adminToken()
      const url = `http://127.0.0.1:${(silent.address() as Net.AddressInfo).port}/`
      const hook = await server.request("POST", `${server.base}/webhooks`, {
        token,
        body: { name: "silent", url, events: ["record.created"] }
      })
      expect(hook.status, hook.text).toBe(201)
      const failed = () =>
        server
          .output()
          .split("\n")
          .filter((l) => l.includes("request failed"))
      const before = failed().length
      await new Promise<void>((resolve) => {
        const socket = Net.connect(server.port, "127.0.0.1", () => {
          socket.write(
            `POST ${server.base}/webhooks/${hook.body.id}/test HTTP/1.1\r\nHost: x\r\n` +
              `Authorization: Bearer ${token}\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}`
          )
          setTimeout(() => {
            socket.destroy()
            resolve()
          }, 500)
        })
        socket.on("error", () => {})
      })
      await sleep(500)
      expect(failed().slice(before), "a client that left is logged as a failed request").toEqual([])
      expect((await server.request("GET", "/health")).status).toBe(200)
      silent.close()
    })
  })
})
