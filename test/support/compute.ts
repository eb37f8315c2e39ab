// Helpers for compute end-to-end tests: functions, triggers and following a run to its end over HTTP.
import type { TestNode, TestServer } from "./TestServer.ts"
import { sleep } from "./wait.ts"

const final = new Set(["completed", "failed", "timed_out"])

export const computeClient = (server: TestServer, token: string, workspace = server.workspace) => {
  const base = `/workspace/${workspace}/api/v1`
  const call = (node: Pick<TestNode, "request">, method: string, path: string, body?: unknown) =>
    node.request(method, `${base}${path}`, { token, ...(body !== undefined ? { body } : {}) })

  const api = {
    base,
    call: (method: string, path: string, body?: unknown) => call(server, method, path, body),
    createFunction: async (name: string, code: string, description?: string) => {
      const res = await call(server, "POST", "/compute-functions", { name, code, ...(description ? { description } : {}) })
      if (res.status !== 201) throw new Error(`create function ${name}: ${res.status} ${res.text}`)
      return res.body as { id: string; name: string; version: number; code: string }
    },
    createTrigger: async (body: Record<string, unknown>) => {
      const res = await call(server, "POST", "/function-triggers", body)
      if (res.status !== 201) throw new Error(`create trigger: ${res.status} ${res.text}`)
      return res.body as { id: string; name: string; triggerMetadata: Record<string, any> }
    },
    /** Polls `GET /function-runs?jobId=` (through `node`) until the run is final. */
    waitRun: async (jobId: string, node: Pick<TestNode, "request"> = server, timeoutMs = 30_000) => {
      const deadline = Date.now() + timeoutMs
      let last: any
      while (Date.now() < deadline) {
        const res = await call(node, "GET", `/function-runs?jobId=${jobId}`)
        last = res.body
        if (res.status === 200 && final.has(res.body.status)) return res.body
        await sleep(25)
      }
      throw new Error(`run ${jobId} did not finish within ${timeoutMs} ms: ${JSON.stringify(last)}`)
    },
    /** Queues a test execution of `code` with `params` and waits for its final state. */
    runCode: async (code: string, params: Record<string, unknown> = {}) => {
      const res = await call(server, "POST", "/compute-functions/test", { code, params })
      if (res.status !== 200) throw new Error(`test: ${res.status} ${res.text}`)
      return api.waitRun(res.body.jobId)
    }
  }
  return api
}

/** Wraps a function body in `async function run() { ... }`. */
export const fn = (body: string) => `async function run() {\n${body}\n}`
