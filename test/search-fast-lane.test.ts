// `GET /search` is answered by the fast lane (search/FastSearch.ts) when its parameters are the endpoint's own; with
// any other (here `lane=stack`, which the endpoint ignores) by the ordinary handler. Both must answer alike: hits,
// no hits, a bad parameter, an unknown structure, a bad token, a token without read:records. PGlite and (with
// DATABASE_URL) PostgreSQL.
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Client, client, createServiceAccountClient, createStructure, expectStatus, slug } from "./support/records.ts"
import { answeredByLane } from "./support/lanes.ts"
import { startServer, type TestServer } from "./support/TestServer.ts"

const METRICS_TOKEN = "scrape-secret"
const SEARCH_ROUTE = "/search/workspace/:workspace/api/v1/search"

let server: TestServer
let api: Client

beforeAll(async () => {
  server = await startServer({ env: { TROUPE_METRICS_TOKEN: METRICS_TOKEN } })
  api = client(server, await server.adminToken())
}, 300_000)

afterAll(async () => {
  await server?.close()
})

/** Searches answered so far by each lane. */
const answeredBy = () => answeredByLane(server, METRICS_TOKEN, SEARCH_ROUTE)

/** The same search through both lanes: equal status and body (but for the time taken and the request id). */
const both = async (query: string, token: string | undefined = api.token) => {
  const path = `/search/workspace/${server.workspace}/api/v1/search?${query}`
  const fast = await server.request("GET", path, { token })
  const ordinary = await server.request("GET", `${path}&lane=stack`, { token })
  expect(fast.status).toBe(ordinary.status)
  expect(fast.headers.get("content-type")).toBe(ordinary.headers.get("content-type"))
  const comparable = (body: any) => ({ ...body, tookMs: undefined, requestId: undefined })
  expect(comparable(fast.body)).toEqual(comparable(ordinary.body))
  if (fast.status >= 400) expect(fast.body.requestId).toBe(fast.headers.get("x-request-id"))
  return fast
}

describe("GET /search: the fast lane answers as the ordinary handler", () => {
  it("hits, no hits, bad input and missing rights alike, each through its lane", async () => {
    const s = await createStructure(api, {
      name: slug("lane"),
      properties: [
        { name: "title", type: "string" },
        { name: "pin", type: "string", isSecret: true }
      ]
    })
    for (const title of ["Quiet harbour lights", "Harbour master's log", "Mountain pass"])
      expectStatus(await api.call("POST", "/records", { structureId: s.id, data: { title, pin: "1234" } }), 201)
    const before = await answeredBy()
    const hits = await both(`q=harbour&structures=${s.recordSlug}`)
    expect(hits.status).toBe(200)
    expect(hits.body.total).toBe(2)
    expect(hits.body.results[0].highlights.title).toContain("<mark>")
    expect(hits.body.results[0].record.data.pin).not.toBe("1234")
    expect((await both(`q=harbour&structures=${s.recordSlug}&limit=1&offset=1`)).body.results).toHaveLength(1)
    expect((await both(`q=volcano&structures=${s.recordSlug}`)).body).toMatchObject({ results: [], total: 0 })
    expect((await both(`q=harbour&limit=0`)).status).toBe(400)
    expect((await both(`q=harbour&structures=nosuchthing`)).body.code).toBe("VALIDATION_ERROR")
    expect((await both("q=harbour", "not-a-token")).status).toBe(401)
    const nothing = await createServiceAccountClient(server, api, { permissions: [] })
    expect((await both("q=harbour", nothing.token)).status).toBe(403)
    const after = await answeredBy()
    expect(after.fast - before.fast).toBe(7)
    expect(after.stack - before.stack).toBe(7)
  })
})
