// The search service end to end (CONTRACT §8.2, docs/search.md), through HTTP, on PGlite and (with DATABASE_URL)
// PostgreSQL: golden relevance fixtures (a query and the expected order of its top results, typos and prefixes
// included), highlights, languages, secrets, deleted and expired records, the document following updates,
// restores and reverts, permissions, narrowing and paging, bad input (always a 4xx), the structure settings, and
// re-indexing after a change of searchFields under concurrent writes.
import { execFile } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { createTroupeClient } from "../packages/client-fetch/src/TroupeClient.ts"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { computeClient, fn } from "./support/compute.ts"
import { createUser } from "./support/IdentityHelpers.ts"
import { type Client, client, createServiceAccountClient, createStructure, expectError, expectStatus, slug } from "./support/records.ts"
import { startServer, type TestServer } from "./support/TestServer.ts"
import { eventually } from "./support/wait.ts"

let server: TestServer
let api: Client

// SEARCH_TEST_LOG=<file>: the node logs at debug level and its whole output is written there at the end
beforeAll(async () => {
  server = await startServer(process.env.SEARCH_TEST_LOG ? { env: { TROUPE_LOG_LEVEL: "debug" } } : {})
  api = client(server, await server.adminToken())
}, 300_000)

afterAll(async () => {
  if (process.env.SEARCH_TEST_LOG) {
    await new Promise((r) => setTimeout(r, 1000))
    Fs.writeFileSync(process.env.SEARCH_TEST_LOG, server?.output() ?? "")
  }
  await server?.close()
})

const searchPath = (params: Record<string, string>) => `/search/workspace/${server.workspace}/api/v1/search?${new URLSearchParams(params)}`

const search = (params: Record<string, string>, as: Client = api) => server.request("GET", searchPath(params), { token: as.token })

/** The ids of a search's results, in order. */
const ids = async (params: Record<string, string>) => {
  const res = await search(params)
  expectStatus(res, 200)
  return (res.body.results as Array<any>).map((r) => r.id as string)
}

const create = async (structureId: string, data: Record<string, unknown>, query = "") => {
  const res = await api.call("POST", `/records${query}`, { structureId, data })
  expectStatus(res, 201)
  return res.body.id as string
}

describe("relevance (golden fixtures)", () => {
  let s: { id: string; recordSlug: string }
  const r: Record<string, string> = {}

  beforeAll(async () => {
    s = await createStructure(api, {
      name: slug("articles"),
      properties: [
        { name: "title", type: "string" },
        { name: "body", type: "string" },
        { name: "apiKey", type: "string", isSecret: true }
      ],
      searchFields: [
        { name: "title", weight: 4 },
        { name: "body", weight: 1 }
      ]
    })
    r.guide = await create(s.id, { title: "Database indexing guide", body: "How PostgreSQL builds a GIN index" })
    r.pasta = await create(s.id, { title: "Cooking pasta", body: "A database of recipes for pasta lovers" })
    r.garden = await create(s.id, { title: "Gardening", body: "Tomatoes and basil in summer" })
    r.library = await create(s.id, { title: "The library", body: "A quiet database of books, a database of maps" })
    r.secret = await create(s.id, { title: "Keys", body: "nothing to see", apiKey: "supersecretvalue" })
    // typo candidates come from the lexicon, which the outbox relay fills after the writes (search/Lexicon.ts)
    // (each record's words arrive together, but records may arrive in different drains: wait for one typo per record)
    const near = async (q: string, count: number) => ((await ids({ q, structures: s.recordSlug })).length === count ? true : undefined)
    for (const [q, count] of [
      ["datbase", 3],
      ["postgrsqll", 1],
      ["tomatos", 1],
      ["bokks", 1]
    ] as const) {
      await eventually(() => near(q, count), 30_000)
    }
  }, 120_000)

  it.each([
    ["a title match ranks above body matches", "database", ["guide", "library", "pasta"]],
    ["a prefix of the last word", "datab", ["guide", "library", "pasta"]],
    ["one typo in a word of 5+ letters", "datbase", ["guide", "library", "pasta"]],
    ["two typos in a word of 9+ letters", "postgrsqll", ["guide"]],
    ["every word must match, in any field", "pasta recipes", ["pasta"]],
    ["a typo in each word", "databse indexng", ["guide"]],
    ["a transposition is one typo", "tomatoes bsail", ["garden"]],
    ["an inserted letter", "tomatos", ["garden"]],
    ["a typo in the prefix of the last word", "datbas", ["guide", "library", "pasta"]],
    ["a typo in the prefix of a longer last word", "indexing pstgre", ["guide"]],
    ["nothing near", "zebra", []]
  ])("%s: %s", async (_label, q, expected) => {
    const found = await ids({ q, structures: s.recordSlug })
    expect(found).toEqual(expected.map((k) => r[k]))
  })

  it("short words tolerate no typo (and only the last word is a prefix)", async () => {
    expect(await ids({ q: "bsil summer", structures: s.recordSlug })).toEqual([])
    expect(await ids({ q: "basil summ", structures: s.recordSlug })).toEqual([r.garden])
    expect(await ids({ q: "summ basil", structures: s.recordSlug })).toEqual([])
  })

  it("answers hits with score, highlights and the record as generation B shows it", async () => {
    const res = await search({ q: "database guide", structures: s.recordSlug })
    expectStatus(res, 200)
    expect(res.body.total).toBe(1)
    expect(typeof res.body.tookMs).toBe("number")
    const [hit] = res.body.results
    expect(hit).toMatchObject({ structureId: s.id, recordSlug: s.recordSlug, id: r.guide })
    expect(hit.score).toBeGreaterThan(0)
    expect(hit.highlights.title).toBe("<mark>Database</mark> indexing <mark>guide</mark>")
    expect(hit.highlights.body).toBeUndefined()
    expect(hit.record).toMatchObject({ id: r.guide, structureId: s.id, data: { title: "Database indexing guide" }, version: 1 })
  })

  it("never indexes, finds or shows secrets", async () => {
    expect(await ids({ q: "supersecretvalue", structures: s.recordSlug })).toEqual([])
    const res = await search({ q: "keys", structures: s.recordSlug })
    expect(res.body.results[0].record.data.apiKey).not.toBe("supersecretvalue")
    expect(JSON.stringify(res.body)).not.toContain("supersecretvalue")
  })

  it("pages, counting every match", async () => {
    const first = await search({ q: "database", structures: s.recordSlug, limit: "2" })
    expect(first.body.total).toBe(3)
    expect(first.body.results.map((h: any) => h.id)).toEqual([r.guide, r.library])
    const second = await search({ q: "database", structures: s.recordSlug, limit: "2", offset: "2" })
    expect(second.body.results.map((h: any) => h.id)).toEqual([r.pasta])
    const past = await search({ q: "database", structures: s.recordSlug, offset: "10" })
    expect(past.body).toMatchObject({ results: [], total: 3 })
  })
})

describe("what is searched", () => {
  it("falls back to defaultSearchField, then to every string property", async () => {
    const named = await createStructure(api, {
      name: slug("named"),
      properties: [
        { name: "name", type: "string" },
        { name: "note", type: "string" }
      ],
      defaultSearchField: "name"
    })
    const a = await create(named.id, { name: "walrus", note: "penguin" })
    expect(await ids({ q: "walrus", structures: named.recordSlug })).toEqual([a])
    expect(await ids({ q: "penguin", structures: named.recordSlug })).toEqual([])

    const all = await createStructure(api, {
      name: slug("all"),
      properties: [
        { name: "name", type: "string" },
        { name: "note", type: "string" },
        { name: "count", type: "number" }
      ]
    })
    const b = await create(all.id, { name: "walrus", note: "penguin", count: 12345 })
    expect(await ids({ q: "penguin walrus", structures: all.recordSlug })).toEqual([b])
    expect(await ids({ q: "12345", structures: all.recordSlug })).toEqual([])
  })

  it("stems in the structure's language", async () => {
    const en = await createStructure(api, {
      name: slug("english"),
      properties: [{ name: "text", type: "string" }],
      searchLanguage: "english"
    })
    const simple = await createStructure(api, { name: slug("simple"), properties: [{ name: "text", type: "string" }] })
    const a = await create(en.id, { text: "The runners were running fast" })
    const b = await create(simple.id, { text: "The runners were running fast" })
    expect(await ids({ q: "runs", structures: en.recordSlug })).toEqual([a])
    expect(await ids({ q: "runs", structures: simple.recordSlug })).toEqual([])
    // both languages in one search: each structure is searched in its own
    expect((await ids({ q: "running", structures: `${en.recordSlug},${simple.recordSlug}` })).sort()).toEqual([a, b].sort())
  })

  it("narrows to the structures named, and searches every one when none is", async () => {
    const word = `narrow${Date.now().toString(36)}`
    const one = await createStructure(api, { name: slug("one"), properties: [{ name: "t", type: "string" }] })
    const two = await createStructure(api, { name: slug("two"), properties: [{ name: "t", type: "string" }] })
    const a = await create(one.id, { t: word })
    const b = await create(two.id, { t: word })
    expect((await ids({ q: word })).sort()).toEqual([a, b].sort())
    expect(await ids({ q: word, structures: two.recordSlug })).toEqual([b])
    expect(await ids({ q: word, structures: one.id })).toEqual([a])
  })

  it("a repeated query follows the lexicon and the structure's language (the node remembers words, not results)", async () => {
    const s = await createStructure(api, { name: slug("repeat"), properties: [{ name: "t", type: "string" }] })
    const zebra = await create(s.id, { t: "zebra crossing" })
    // "zebrra" is nobody's word: corrected to zebra (once the lexicon has it), as often as it is asked
    await eventually(async () => ((await ids({ q: "zebrra", structures: s.recordSlug })).length === 1 ? true : undefined), 30_000)
    for (let i = 0; i < 2; i++) expect(await ids({ q: "zebrra", structures: s.recordSlug })).toEqual([zebra])
    // once a record has it, it is taken as typed
    const typed = await create(s.id, { t: "zebrra" })
    await eventually(async () => ((await ids({ q: "zebrra", structures: s.recordSlug })).length === 1 ? true : undefined), 30_000)
    expect(await ids({ q: "zebrra", structures: s.recordSlug })).toEqual([typed])
    // the scope's language is the structure's current one
    const runners = await create(s.id, { t: "runners running" })
    expect(await ids({ q: "runs", structures: s.recordSlug })).toEqual([])
    expectStatus(await api.call("PUT", `/structures/${s.id}`, { searchLanguage: "english" }), 200)
    await eventually(async () => ((await ids({ q: "runs", structures: s.recordSlug })).length === 1 ? true : undefined), 30_000)
    expect(await ids({ q: "runs", structures: s.id.toUpperCase() })).toEqual([runners])
  })

  it("escapes the text around the marks", async () => {
    const s = await createStructure(api, { name: slug("html"), properties: [{ name: "t", type: "string" }] })
    await create(s.id, { t: `Fish & chips "quoted" <script>alert(1)</script> haddock` })
    const res = await search({ q: "haddock", structures: s.recordSlug })
    const html: string = res.body.results[0].highlights.t
    expect(html).toContain("<mark>haddock</mark>")
    expect(html).toContain("&amp;")
    expect(html).not.toContain("<script>")
  })
})

describe("the document follows the record", () => {
  it("updates, deletes, restores and reverts", async () => {
    const s = await createStructure(api, {
      name: slug("follow"),
      properties: [{ name: "t", type: "string" }],
      enableVersioning: true
    })
    const id = await create(s.id, { t: "aardvark" })
    const find = (q: string) => ids({ q, structures: s.recordSlug })
    expect(await find("aardvark")).toEqual([id])

    expectStatus(await api.call("PATCH", `/records/${id}`, { data: { t: "blackbird" } }), 200)
    expect(await find("aardvark")).toEqual([])
    expect(await find("blackbird")).toEqual([id])

    expectStatus(await api.call("POST", `/records/${id}/restore`, { version: 1 }), 200)
    expect(await find("aardvark")).toEqual([id])
    expect(await find("blackbird")).toEqual([])

    expectStatus(await api.call("POST", `/records/${id}/revert`, {}), 200)
    expect(await find("blackbird")).toEqual([id])

    expectStatus(await api.call("DELETE", `/records/${id}`), 200)
    expect(await find("blackbird")).toEqual([])
  })

  it("never matches expired records", async () => {
    const s = await createStructure(api, { name: slug("ttl"), properties: [{ name: "t", type: "string" }] })
    const expiresAt = new Date(Date.now() + 1500).toISOString()
    const id = await create(s.id, { t: "mayfly" }, `?expiresAt=${encodeURIComponent(expiresAt)}`)
    const kept = await create(s.id, { t: "mayfly tortoise" })
    expect((await ids({ q: "mayfly", structures: s.recordSlug })).sort()).toEqual([id, kept].sort())
    await eventually(async () => ((await ids({ q: "mayfly", structures: s.recordSlug })).length === 1 ? true : undefined), 20_000)
    expect(await ids({ q: "mayfly", structures: s.recordSlug })).toEqual([kept])
  })
})

describe("permissions", () => {
  it("needs read:records, and sees only its own workspace", async () => {
    const s = await createStructure(api, { name: slug("perm"), properties: [{ name: "t", type: "string" }] })
    const word = `ocelot${Date.now().toString(36)}`
    const id = await create(s.id, { t: word })
    const viewer = await createUser(server, api.token, "viewer")
    const asViewer = await server.request("GET", searchPath({ q: word }), { token: viewer.token })
    expectStatus(asViewer, 200)
    expect(asViewer.body.results.map((h: any) => h.id)).toEqual([id])
    const nothing = await createServiceAccountClient(server, api, { permissions: [] })
    expectError(await search({ q: word }, nothing), 403, "PERMISSION_DENIED")
    expectError(await server.request("GET", searchPath({ q: word })), 401)

    const other = `other-${Date.now().toString(36)}`
    expectStatus(await server.request("POST", "/workspace/api/v1/workspaces", { token: api.token, body: { slug: other } }), 201)
    const otherToken = await server.userToken("admin", server.adminPassword, other)
    const elsewhere = await server.request("GET", `/search/workspace/${other}/api/v1/search?q=${word}`, { token: otherToken })
    expectStatus(elsewhere, 200)
    expect(elsewhere.body).toMatchObject({ results: [], total: 0 })
  })
})

describe("bad input", () => {
  it("refuses missing, blank and overlong queries, bad paging and unknown structures with a 400", async () => {
    for (const params of [{}, { q: "" }, { q: "   " }, { q: "x".repeat(1001) }, { q: "a", limit: "0" }, { q: "a", limit: "101" }]) {
      expectError(await search(params as Record<string, string>), 400)
    }
    for (const params of [
      { q: "a", limit: "abc" },
      { q: "a", offset: "-1" },
      { q: "a", offset: "10001" },
      { q: "a", limit: "1.5" }
    ]) {
      expectError(await search(params), 400)
    }
    const unknown = await search({ q: "a", structures: "no-such-thing,nor-this" })
    expectError(unknown, 400)
    expect(unknown.body.message).toContain("no-such-thing")
    expect(unknown.body.message).toContain("nor-this")
    expect(unknown.body.details[0].field).toBe("structures")
  })

  it("answers anything else with results, never an error", async () => {
    const inputs = [
      `"unbalanced`,
      `'quote' "double"`,
      "a & b | !c",
      "foo:* bar:A (baz) <-> qux <2>",
      "&|!:*()",
      "🦄🔥 emoji only",
      "🦄",
      "مرحبا بالعالم",
      "שלום עולם",
      "\\ backslash \\\\",
      "x".repeat(1000),
      "word ".repeat(200).trim(),
      "東京 タワー",
      "-not +must ~fuzzy field:value OR AND"
    ]
    for (const q of inputs) {
      const res = await search({ q })
      expect(res.status, `q=${JSON.stringify(q.slice(0, 40))}: ${res.text.slice(0, 200)}`).toBe(200)
      expect(Array.isArray(res.body.results)).toBe(true)
    }
    expectError(await search({ q: "y".repeat(10_000) }), 400)
    // NUL never reaches the database: the node's input guard answers 400 for it, on every route
    expectError(await search({ q: "\u0000nul\u0000" }), 400)
  })

  it("checks searchFields and searchLanguage like every structure setting", async () => {
    const properties = [
      { name: "title", type: "string" },
      { name: "count", type: "number" },
      { name: "token", type: "string", isSecret: true }
    ]
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ searchFields: [{ name: "nope", weight: 1 }] }, "nope"],
      [{ searchFields: [{ name: "count", weight: 1 }] }, "count"],
      [{ searchFields: [{ name: "token", weight: 1 }] }, "token"],
      [{ searchFields: [{ name: "title", weight: 5 }] }, "weight"],
      [{ searchFields: [{ name: "title", weight: 0 }] }, "weight"],
      [{ searchLanguage: "klingon" }, "searchLanguage"]
    ]
    for (const [extra, named] of cases) {
      const res = await api.call("POST", "/structures", { name: slug("bad"), properties, ...extra })
      expectError(res, 400)
      expect(JSON.stringify(res.body.details)).toContain(named)
    }
    const ok = await api.call("POST", "/structures", {
      name: slug("good"),
      properties,
      searchFields: [{ name: "title", weight: 3 }],
      searchLanguage: "french"
    })
    expectStatus(ok, 200)
    expect(ok.body).toMatchObject({ searchFields: [{ name: "title", weight: 3 }], searchLanguage: "french" })
    // making a searched property secret is refused while it is searched
    const secretNow = await api.call("PUT", `/structures/${ok.body.id}`, {
      properties: [{ ...ok.body.properties[0], isSecret: true }]
    })
    expectError(secretNow, 400)
  })
})

describe("re-indexing", () => {
  it("re-indexes every record after searchFields change, while writes go on", async () => {
    const s = await createStructure(api, {
      name: slug("reindex"),
      properties: [
        { name: "title", type: "string" },
        { name: "body", type: "string" }
      ],
      searchFields: [{ name: "title", weight: 1 }]
    })
    const bulk = async (from: number, n: number) => {
      const items = Array.from({ length: n }, (_, i) => ({ data: { title: `item ${from + i}`, body: "quokka" } }))
      const res = await api.call("POST", "/records/bulk", { structureId: s.id, records: items })
      expectStatus(res, 201)
    }
    for (let i = 0; i < 6; i++) await bulk(i * 200, 200)
    expect((await search({ q: "quokka", structures: s.recordSlug })).body.total).toBe(0)
    // change the fields while more records are written
    const writes = (async () => {
      for (let i = 6; i < 10; i++) await bulk(i * 200, 200)
    })()
    const changed = await api.call("PUT", `/structures/${s.id}`, {
      searchFields: [
        { name: "title", weight: 2 },
        { name: "body", weight: 1 }
      ]
    })
    expectStatus(changed, 200)
    await writes
    const total = await eventually(async () => {
      const res = await search({ q: "quokka", structures: s.recordSlug, limit: "1" })
      return res.body.total === 2000 ? res.body.total : undefined
    }, 120_000)
    expect(total).toBe(2000)
    expect((await search({ q: "item", structures: s.recordSlug })).body.total).toBe(2000)
  }, 240_000)
})

describe("one engine: the lists' search= and SEARCH()", () => {
  it("read the index of a structure that names its search fields: its words, prefixes and language", async () => {
    const s = await createStructure(api, {
      name: slug("engine"),
      properties: [
        { name: "title", type: "string" },
        { name: "body", type: "string" }
      ],
      searchFields: [{ name: "title", weight: 2 }],
      searchLanguage: "english"
    })
    const shoes = await create(s.id, { title: "Running shoes", body: "blue canvas" })
    await create(s.id, { title: "Garden hose", body: "green rubber" })
    const list = async (query: string) => {
      const res = await api.call("GET", `/records?structureId=${s.id}&${query}`)
      expectStatus(res, 200)
      return (res.body.results as Array<any>).map((r) => r.id)
    }
    const query = async (text: string) => {
      const res = await api.call("POST", "/query", { query: `FROM ${s.recordSlug} WHERE ${text}` })
      expectStatus(res, 200)
      return (res.body.results as Array<any>).map((r) => r.id)
    }
    // found the moment the create answered; stemmed in english; the last word as a prefix; every word required
    expect(await list("search=shoe")).toEqual([shoes])
    expect(await list("search=run")).toEqual([shoes])
    expect(await list(`search=${encodeURIComponent("running sho")}`)).toEqual([shoes])
    expect(await list(`search=${encodeURIComponent("running hose")}`)).toEqual([])
    expect(await query("SEARCH('runs')")).toEqual([shoes])
    // the body is not a search field: only named fields reach it
    expect(await list("search=canvas")).toEqual([])
    expect(await list("search=canvas&searchFields=body")).toEqual([shoes])
    expect(await query("SEARCH('canvas') IN (body)")).toEqual([shoes])
    // GET /search agrees
    expect(await ids({ q: "running sho", structures: s.recordSlug })).toEqual([shoes])
  })
})

describe("records with heavy search fields", () => {
  it("read and list on every backend when their fields weigh 3 and 4 (tsvector labels A and B)", async () => {
    const s = await createStructure(api, {
      name: slug("heavy"),
      properties: [
        { name: "title", type: "string" },
        { name: "summary", type: "string" }
      ],
      searchFields: [
        { name: "title", weight: 4 },
        { name: "summary", weight: 3 }
      ]
    })
    const id = await create(s.id, { title: "alpha beta gamma", summary: "delta epsilon zeta" })
    for (const path of [`/records/${id}`, `/records?structureId=${s.id}`, `/records?structureId=${s.recordSlug}&search=alpha`]) {
      expectStatus(await api.call("GET", path), 200)
    }
    const listed = await api.call("GET", `/records?structureId=${s.id}&search=${encodeURIComponent("alpha delt")}`)
    expectStatus(listed, 200)
    expect(listed.body.results.map((r: any) => r.id)).toEqual([id])
    expect(JSON.stringify(listed.body)).not.toContain("search_vector")
  })
})

describe("clients", () => {
  it("search() of @troupe/client-fetch and api.search in functions", async () => {
    const s = await createStructure(api, { name: slug("clients"), properties: [{ name: "t", type: "string" }] })
    const id = await create(s.id, { t: "pangolin scales" })
    const troupe = createTroupeClient({ baseUrl: server.baseUrl, workspace: server.workspace, token: api.token })
    const { data, error } = await troupe.search({ q: "pangolin", structures: [s.recordSlug], limit: 5 })
    expect(error).toBeUndefined()
    expect(data?.results.map((h: { id: string }) => h.id)).toEqual([id])
    expect(data?.results[0]?.highlights.t).toBe("<mark>pangolin</mark> scales")
    // the typo's candidate comes from the lexicon, filled after the write (search/Lexicon.ts)
    await eventually(
      async () => ((await troupe.search({ q: "pangolni", structures: [s.recordSlug] })).data?.total === 1 ? true : undefined),
      20_000
    )

    const c = computeClient(server, api.token)
    const run = await c.runCode(
      fn(`const a = await api.search("pangolni", { structures: ["${s.recordSlug}"] })
const b = await api.search({ q: "scal", structures: "${s.recordSlug}", limit: 1 })
let refused
try { await api.search("") } catch (e) { refused = e.statusCode }
return { a: a.results.map((h) => h.id), b: b.total, refused }`)
    )
    expect(run.status).toBe("completed")
    expect(run.result).toEqual({ a: [id], b: 1, refused: 400 })
  }, 120_000)

  it("troupe search prints the hits, best first, with the matches in brackets", async () => {
    const s = await createStructure(api, { name: slug("cli"), properties: [{ name: "t", type: "string" }] })
    const id = await create(s.id, { t: "narwhal tusk & fjord" })
    const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "troupe-search-cli-"))
    const bin = Path.join(import.meta.dirname, "../packages/cli/bin/troupe.mjs")
    const env = {
      ...process.env,
      TROUPE_URL: server.baseUrl,
      TROUPE_WORKSPACE: server.workspace,
      TROUPE_TOKEN: api.token,
      TROUPE_CONFIG: Path.join(dir, "cli.json")
    }
    const troupe = (args: ReadonlyArray<string>) =>
      new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
        execFile(process.execPath, [bin, ...args], { env }, (error, stdout, stderr) =>
          resolve({ code: error === null ? 0 : ((error as { code?: number }).code ?? 1), stdout, stderr })
        )
      })
    // the typo's candidate comes from the lexicon, filled after the write (search/Lexicon.ts)
    await eventually(async () => ((await ids({ q: "narwhl tus", structures: s.recordSlug })).length === 1 ? true : undefined), 30_000)
    const human = await troupe(["search", "narwhl tus", "--structure", s.recordSlug])
    expect(human.code, human.stderr).toBe(0)
    expect(human.stdout).toContain(`${s.recordSlug}/${id}`)
    expect(human.stdout).toContain("t: [narwhal] [tusk] & fjord")
    expect(human.stdout).toContain("1 match(es)")
    const json = await troupe(["search", "narwhal", "--structure", s.recordSlug, "--limit", "5", "--json"])
    expect(json.code, json.stderr).toBe(0)
    expect(JSON.parse(json.stdout)).toMatchObject({ total: 1, results: [{ id }] })
    const blank = await troupe(["search", " "])
    expect(blank.code).toBe(1)
    Fs.rmSync(dir, { recursive: true, force: true })
  }, 120_000)
})
