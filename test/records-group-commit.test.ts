// Group commit across records (records/write/: creates, updates and deletes of different records that arrive while a
// transaction is in flight share the next one). Real concurrent HTTP requests against one node, on either backend:
// a batch mixing creates, patches and deletes with bad items among them answers each caller its own outcome and
// writes nothing of the bad ones; upserts of different keys share transactions too; a batch that crosses a unique claim lets exactly one claimant win; every record keeps
// its versions, changelog and events in order. /metrics proves that writes did share transactions.
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Client, client, countOf, createStructure, expectError, expectStatus, slug, subscribe } from "./support/records.ts"
import { startServer, type TestServer } from "./support/TestServer.ts"
import { sleep } from "./support/wait.ts"

const METRICS_TOKEN = "group-commit-scrape"
const times = <A>(n: number, f: (i: number) => Promise<A>) => Promise.all(Array.from({ length: n }, (_, i) => f(i)))

describe("group commit of record writes", () => {
  let server: TestServer
  let api: Client
  let items: { id: string; recordSlug: string }

  /** Batches written so far, how many carried more than one write, how many were written again one by one. */
  const batches = async () => {
    const res = await server.request("GET", "/metrics", { token: METRICS_TOKEN })
    expectStatus(res, 200)
    let count = 0
    let single = 0
    let retried = 0
    for (const line of res.text.split("\n")) {
      const r = /^troupe_record_write_batch_retries_total\{[^}]*\} (\d+)/.exec(line)
      if (r !== null) retried += Number(r[1])
      const m = /^troupe_record_write_batch_size_(count|bucket)\{([^}]*)\} (\d+)/.exec(line)
      if (m === null) continue
      if (m[1] === "count") count += Number(m[3])
      else if (/le="1"/.test(m[2]!)) single += Number(m[3])
    }
    return { count, shared: count - single, retried }
  }

  beforeAll(async () => {
    server = await startServer({
      env: { TROUPE_LIMIT_WRITES: "0", TROUPE_LIMIT_BULK: "0", TROUPE_LIMIT_READS: "0", TROUPE_METRICS_TOKEN: METRICS_TOKEN }
    })
    api = client(server, await server.adminToken())
    items = await createStructure(api, {
      name: "Item",
      recordSlug: slug("item"),
      properties: [
        { name: "key", type: "string", isUnique: true },
        { name: "n", type: "number" }
      ]
    })
  })
  afterAll(async () => {
    await server?.close()
  })

  const create = (data: Record<string, unknown>) => api.call("POST", "/records", { structureId: items.id, data })

  it("a mixed batch of creates, patches and deletes with bad items: each caller gets its own outcome", async () => {
    const seeded = await api.call("POST", "/records/bulk", {
      structureId: items.id,
      records: Array.from({ length: 40 }, (_, i) => ({ data: { key: `seed-${i}`, n: i } }))
    })
    expectStatus(seeded, 201)
    const ids: Array<string> = seeded.body.records.map((r: any) => r.id)
    const before = await batches()

    const missing = "00000000-0000-4000-8000-000000000000"
    const [creates, patches, deletes] = await Promise.all([
      times(30, (i) => create(i === 3 ? { key: "bad-type", n: "many" } : i === 7 ? { key: "seed-0", n: 1 } : { key: `new-${i}`, n: i })),
      times(20, (i) =>
        api.call(
          "PATCH",
          `/records/${ids[i]}`,
          i === 5 ? { data: { n: "x" } } : i === 9 ? { data: { n: 1 }, expectedVersion: 7 } : { data: { n: 1000 + i } }
        )
      ),
      times(10, (i) => api.call("DELETE", `/records/${i === 4 ? missing : ids[20 + i]}`))
    ])

    // creates: one bad type (400), one taken key (409), the rest created once each
    expectError(creates[3]!, 400, "VALIDATION_ERROR")
    expectError(creates[7]!, 409, "DUPLICATE_KEY")
    creates.forEach((r, i) => {
      if (i !== 3 && i !== 7) {
        expectStatus(r, 201)
        expect(r.body.data).toEqual({ key: `new-${i}`, n: i })
        expect(r.body.version).toBe(1)
      }
    })
    // patches: one bad type (400), one stale version (409), the rest at version 2 with their own value
    expectError(patches[5]!, 400, "VALIDATION_ERROR")
    expectError(patches[9]!, 409, "VERSION_CONFLICT")
    patches.forEach((r, i) => {
      if (i !== 5 && i !== 9) {
        expectStatus(r, 200)
        expect(r.body).toMatchObject({ id: ids[i], version: 2, data: { key: `seed-${i}`, n: 1000 + i } })
      }
    })
    // deletes: the unknown id is a 404, every other record is gone
    expectError(deletes[4]!, 404)
    deletes.forEach((r, i) => {
      if (i !== 4) expect(r.status, r.text).toBe(200)
    })

    // what was stored is exactly what was answered
    for (const i of [5, 9]) {
      const r = await api.call("GET", `/records/${ids[i]}`)
      expect(r.body).toMatchObject({ version: 1, data: { n: i } })
    }
    for (let i = 0; i < 20; i++) {
      if (i === 5 || i === 9) continue
      expect((await api.call("GET", `/records/${ids[i]}`)).body.data.n).toBe(1000 + i)
    }
    for (let i = 0; i < 10; i++) {
      if (i !== 4) expectError(await api.call("GET", `/records/${ids[20 + i]}`), 404)
    }
    expect(await countOf(api, items.id)).toBe(40 - 9 + 28)
    expect((await api.call("GET", `/records/slug/${items.recordSlug}?filter[key]=bad-type`)).body.data).toEqual([])
    // a deleted record gave its key up: it can be taken again
    expectStatus(await create({ key: "seed-21", n: 0 }), 201)

    const after = await batches()
    expect(after.count).toBeGreaterThan(before.count)
    expect(after.shared, "some writes shared a transaction").toBeGreaterThan(before.shared)
    expect(after.retried, "a batch with a bad item was written again one by one").toBeGreaterThan(before.retried)
  })

  it("what a create answers (alone, batched or in a bulk) is what a read of the record returns", async () => {
    const expiresAt = new Date(Date.now() + 3_600_000).toISOString()
    const singles = await times(12, (i) =>
      api.call("POST", `/records?ttlSeconds=${600 + i}`, { structureId: items.id, data: { n: i, key: `answer-${i}` }, metadata: { i } })
    )
    const bulk = await api.call("POST", "/records/bulk", {
      structureId: items.id,
      records: Array.from({ length: 5 }, (_, i) => ({ data: { n: i, key: `answer-bulk-${i}` }, metadata: { source: "bulk" } }))
    })
    expectStatus(bulk, 201)
    const withExpiry = await api.call("POST", `/records?expiresAt=${encodeURIComponent(expiresAt)}`, {
      structureId: items.id,
      data: { key: "answer-expiry", n: 1 }
    })
    expectStatus(withExpiry, 201)
    expect(withExpiry.body.expiresAt).toBe(expiresAt)
    for (const r of singles) expectStatus(r, 201)
    const answered = [...singles.map((r) => r.body), ...bulk.body.records, withExpiry.body]
    for (const record of answered) {
      const read = await api.call("GET", `/records/${record.id}`)
      expectStatus(read, 200)
      expect(read.body).toEqual(record)
    }
    for (const r of singles) expect(r.body.expiresAt).not.toBeNull()
  })

  it("a batch crossing a unique claim: of many creates claiming one new key, exactly one wins", async () => {
    const results = await times(25, (i) => create({ key: "contested", n: i }))
    const won = results.filter((r) => r.status === 201)
    expect(won).toHaveLength(1)
    for (const r of results) if (r.status !== 201) expectError(r, 409, "DUPLICATE_KEY")
    const list = await api.call("GET", `/records/slug/${items.recordSlug}?filter[key]=contested`)
    expectStatus(list, 200)
    expect(list.body.data.map((r: any) => r.id)).toEqual([won[0]!.body.id])
  })

  it("upserts of different keys share transactions; a bad one, and six of one new key, still get their own answers", async () => {
    const path = `/records/slug/${items.recordSlug}/upsert`
    const existing = await create({ key: "up-existing", n: 0 })
    expectStatus(existing, 201)
    const before = await batches()
    const results = await times(40, (i) =>
      api.call(
        "POST",
        path,
        i === 11
          ? { match: { key: "up-bad" }, data: { n: "not a number" } }
          : i >= 20 && i < 26
            ? { match: { key: "up-twice" }, data: { n: i } }
            : i === 30
              ? { match: { key: "up-existing" }, data: { n: 30 } }
              : { match: { key: `up-${i}` }, data: { n: i } }
      )
    )
    expectError(results[11]!, 400, "VALIDATION_ERROR")
    // six upserts of one new key: one created it, the others updated it, one after another
    expect(
      results
        .slice(20, 26)
        .map((r) => r.status)
        .sort()
    ).toEqual([200, 200, 200, 200, 200, 201])
    const twice = await api.call("GET", `/records/slug/${items.recordSlug}?filter[key]=up-twice`)
    expect(twice.body.data).toHaveLength(1)
    expect(twice.body.data[0].version).toBe(6)
    expectStatus(results[30]!, 200)
    expect(results[30]!.body).toMatchObject({
      operation: "updated",
      data: { id: existing.body.id, version: 2, data: { key: "up-existing", n: 30 } }
    })
    results.forEach((r, i) => {
      if (i === 11 || i === 30 || (i >= 20 && i < 26)) return
      expectStatus(r, 201)
      expect(r.body).toMatchObject({ operation: "created", data: { version: 1, data: { key: `up-${i}`, n: i } } })
    })
    expect((await api.call("GET", `/records/slug/${items.recordSlug}?filter[key]=up-bad`)).body.data).toEqual([])
    const after = await batches()
    expect(after.shared, "some upserts shared a transaction").toBeGreaterThan(before.shared)
  })

  it("upserts after a batch of new keys are written as new at once; keys that exist meanwhile are updated, none twice", async () => {
    // after a batch of new keys the next is written without a lookup; an existing key fails it on its claim, and
    // the batch is looked up and written again (write/Upsert.ts, writeUpserts)
    const path = `/records/slug/${items.recordSlug}/upsert`
    const fresh = await times(20, (i) => api.call("POST", path, { match: { key: `opt-${i}` }, data: { n: i } }))
    for (const r of fresh) expect(r.status).toBe(201)
    const again = await times(30, (i) => api.call("POST", path, { match: { key: `opt-${i}` }, data: { n: 100 + i } }))
    again.forEach((r, i) => {
      expect(r.status).toBe(i < 20 ? 200 : 201)
      expect(r.body).toMatchObject({
        operation: i < 20 ? "updated" : "created",
        data: { version: i < 20 ? 2 : 1, data: { key: `opt-${i}`, n: 100 + i } }
      })
    })
    for (let i = 0; i < 30; i++) {
      const list = await api.call("GET", `/records/slug/${items.recordSlug}?filter[key]=opt-${i}`)
      expect(list.body.data).toHaveLength(1)
    }
  })

  it("versions, changelog and events stay in order per record while the records' writes share transactions", async () => {
    const created = await times(8, (i) => create({ key: `ordered-${i}`, n: 0 }))
    const ids = created.map((r) => {
      expectStatus(r, 201)
      return r.body.id as string
    })
    const stream = await subscribe(server, api.token, `structure=${items.recordSlug}`)
    try {
      await sleep(200)
      // each record's patches one after another, the records side by side: their writes meet in batches
      await Promise.all(
        ids.map(async (id) => {
          for (let k = 1; k <= 10; k++) expectStatus(await api.call("PATCH", `/records/${id}`, { data: { n: k } }), 200)
        })
      )
      for (const id of ids) {
        const history = await api.call("GET", `/records/${id}/history`)
        expect(history.body.versions.map((v: any) => v.version)).toEqual(Array.from({ length: 11 }, (_, i) => 11 - i))
        for (const v of history.body.versions) expect(v.data.n).toBe(v.version - 1)
        const log = await api.call("GET", `/records/${id}/changelog?limit=100`)
        expect(log.body.entries.map((e: any) => e.action)).toEqual([...Array(10).fill("update"), "create"])
        log.body.entries.slice(0, 10).forEach((e: any, k: number) => {
          expect(e.changes.n).toMatchObject({ oldValue: 9 - k, newValue: 10 - k })
        })
      }
      const deadline = Date.now() + 15_000
      const updates = (id: string) => stream.messages.filter((m) => m.event === "record.updated" && m.data?.record?.id === id)
      while (ids.some((id) => updates(id).length < 10) && Date.now() < deadline) await sleep(100)
      for (const id of ids) {
        const events = updates(id)
        expect(events.map((e) => e.data.record.version)).toEqual(Array.from({ length: 10 }, (_, k) => k + 2))
        events.forEach((e, k) => expect(e.data.previous.data.n).toBe(k))
      }
    } finally {
      await stream.close()
    }
  })

  it("events and changelog entries of batched writes carry the record's data and its changes, a secret masked in both", async () => {
    // a statement sends data and changes once and puts them back into the event and the changelog (RecordRepo)
    const secret = await createStructure(api, {
      name: "Vault",
      recordSlug: slug("vault"),
      properties: [
        { name: "label", type: "string" },
        { name: "pin", type: "string", isSecret: true }
      ]
    })
    // a unique value of its own per attempt: a retry of this test on the same server must not meet the last one's
    const key = `payload-${Date.now().toString(36)}`
    const stream = await subscribe(server, api.token, "events=record.created,record.updated")
    try {
      await sleep(200)
      const [plain, hidden] = await Promise.all([
        create({ key, n: 1 }),
        api.call("POST", "/records", { structureId: secret.id, data: { label: "a", pin: "pin-qwertz" } })
      ])
      expectStatus(plain, 201)
      expectStatus(hidden, 201)
      await Promise.all([
        api.call("PATCH", `/records/${plain.body.id}`, { data: { n: 2 } }).then((r) => expectStatus(r, 200)),
        api.call("PATCH", `/records/${hidden.body.id}`, { data: { label: "b", pin: "pin-uvxyjk" } }).then((r) => expectStatus(r, 200))
      ])
      const deadline = Date.now() + 15_000
      const of = (id: string) => stream.messages.filter((m) => m.data?.record?.id === id)
      while ((of(plain.body.id).length < 2 || of(hidden.body.id).length < 2) && Date.now() < deadline) await sleep(100)

      const [plainCreated, plainUpdated] = of(plain.body.id)
      expect(plainCreated.data.record.data).toEqual({ key, n: 1 })
      expect(plainCreated.data.changes).toEqual({ key: { old: null, new: key }, n: { old: null, new: 1 } })
      expect(plainUpdated.data.record).toMatchObject({ version: 2, data: { key, n: 2 } })
      expect(plainUpdated.data.changes).toEqual({ n: { old: 1, new: 2 } })
      expect(plainUpdated.data.previous.data).toEqual({ key, n: 1 })

      const [hiddenCreated, hiddenUpdated] = of(hidden.body.id)
      expect(hiddenCreated.data.record.data).toEqual({ label: "a", pin: "********" })
      expect(hiddenCreated.data.changes).toEqual({ label: { old: null, new: "a" }, pin: { old: null, new: "********" } })
      expect(hiddenUpdated.data.record.data).toEqual({ label: "b", pin: "********" })
      expect(hiddenUpdated.data.changes).toEqual({ label: { old: "a", new: "b" }, pin: { old: "********", new: "********" } })
      // secrets of letters no id, sequence or timestamp holds (digits matched a record's UUID now and then)
      expect(JSON.stringify(stream.messages)).not.toMatch(/qwertz|uvxyjk/)

      const plainLog = await api.call("GET", `/records/${plain.body.id}/changelog`)
      expect(plainLog.body.entries.map((e: any) => e.changes)).toEqual([
        { n: { field: "n", oldValue: 1, newValue: 2 } },
        { key: { field: "key", oldValue: null, newValue: key }, n: { field: "n", oldValue: null, newValue: 1 } }
      ])
      const hiddenLog = await api.call("GET", `/records/${hidden.body.id}/changelog`)
      expect(hiddenLog.body.entries.map((e: any) => e.changes)).toEqual([
        {
          label: { field: "label", oldValue: "a", newValue: "b" },
          pin: { field: "pin", oldValue: "********", newValue: "********" }
        },
        {
          label: { field: "label", oldValue: null, newValue: "a" },
          pin: { field: "pin", oldValue: null, newValue: "********" }
        }
      ])
    } finally {
      await stream.close()
    }
  })

  it("an update planned on a remembered row that someone wrote since: read and written again in its batch, nothing lost", async () => {
    const created = await create({ key: "remembered", n: 0 })
    expectStatus(created, 201)
    const id = created.body.id as string
    // the batch path writes it: the node remembers that row
    expect((await api.call("PATCH", `/records/${id}`, { data: { n: 1 } })).body.version).toBe(2)
    // written outside the batches, keeping the version: only the row version (xmin) tells
    const quiet = await api.call("PATCH", `/records/${id}`, { data: { key: "remembered-2" }, options: { createVersion: false } })
    expectStatus(quiet, 200)
    expect(quiet.body.version).toBe(2)
    const before = await batches()
    const next = await api.call("PATCH", `/records/${id}`, { data: { n: 2 } })
    expectStatus(next, 200)
    expect(next.body).toMatchObject({ version: 3, data: { key: "remembered-2", n: 2 } })
    // the guard skipped it, and its batch read it again: not written on its own
    expect((await batches()).retried).toBe(before.retried)
    expect((await api.call("GET", `/records/${id}`)).body).toMatchObject({ version: 3, data: { key: "remembered-2", n: 2 } })
    // deleted meanwhile: the remembered row is live, the record is not
    expectStatus(await api.call("DELETE", `/records/${id}`), 200)
    expectError(await api.call("PATCH", `/records/${id}`, { data: { n: 3 } }), 404, "RECORD_NOT_FOUND")
  })

  it("updates of one record in one batch: each planned on the one before, a bad one fails alone, the later ones follow it", async () => {
    const created = await create({ key: "chained", n: 0 })
    expectStatus(created, 201)
    const id = created.body.id as string
    const before = await batches()
    // every fifth is invalid (a string for a number); the others set their own field value
    const results = await times(40, (i) => api.call("PATCH", `/records/${id}`, { data: { n: i % 5 === 4 ? "x" : 100 + i } }))
    const ok = results.filter((r) => r.status === 200)
    results.forEach((r, i) => (i % 5 === 4 ? expectError(r, 400, "VALIDATION_ERROR") : expectStatus(r, 200)))
    // 32 updates, versions 2..33, each answering the record as its own update left it
    expect(ok.map((r) => r.body.version).sort((a, b) => a - b)).toEqual(Array.from({ length: 32 }, (_, i) => i + 2))
    for (const r of ok) expect(r.body.previousVersion).toBe(r.body.version - 1)
    const history = await api.call("GET", `/records/${id}/history`)
    expectStatus(history, 200)
    const byVersion = new Map(ok.map((r) => [r.body.version, r.body.data.n]))
    for (const v of history.body.versions.slice(0, 32)) expect(v.data.n).toBe(byVersion.get(v.version))
    const final = await api.call("GET", `/records/${id}`)
    expect(final.body).toMatchObject({ version: 33, data: { n: byVersion.get(33) } })
    // the changelog, newest first, lists them in version order, each with its own change
    const log = await api.call("GET", `/records/${id}/changelog?limit=100`)
    expectStatus(log, 200)
    const updates = log.body.entries.filter((e: any) => e.action === "update")
    expect(updates.map((e: any) => e.changes.n.newValue)).toEqual(Array.from({ length: 32 }, (_, j) => byVersion.get(33 - j)))
    expect((await batches()).count).toBeGreaterThan(before.count)
  })

  it("reads by id sharing one statement each get their own answer and see every write acknowledged before them", async () => {
    const made = await times(20, (i) => create({ key: `read-${i}`, n: i }))
    for (const r of made) expectStatus(r, 201)
    const ids = made.map((r) => r.body.id as string)
    expectStatus(await api.call("DELETE", `/records/${ids[0]}`), 200)
    // a record of another workspace, read through this one, is not found
    const ws = await server.request("POST", "/workspace/api/v1/workspaces", { token: api.token, body: { slug: slug("reads") } })
    expectStatus(ws, 201)
    const otherToken = await server.userToken("admin", server.adminPassword, ws.body.slug)
    const otherBase = `/workspace/${ws.body.slug}/api/v1`
    const elsewhere = await server.request("POST", `${otherBase}/structures`, {
      token: otherToken,
      body: { name: "Elsewhere", recordSlug: slug("elsewhere"), properties: [{ name: "n", type: "number" }] }
    })
    expect(elsewhere.status).toBeLessThan(300)
    const foreign = await server.request("POST", `${otherBase}/records`, {
      token: otherToken,
      body: { structureId: elsewhere.body.id, data: { n: 1 } }
    })
    expectStatus(foreign, 201)
    const unknown = "00000000-0000-4000-8000-000000000000"

    const targets = [...ids.flatMap((id) => [id, id.toUpperCase()]), foreign.body.id as string, unknown]
    const reads = await Promise.all(targets.map((id) => api.call("GET", `/records/${id}`)))
    reads.forEach((r, k) => {
      const id = targets[k]!.toLowerCase()
      const n = ids.indexOf(id)
      if (n <= 0) return expectError(r, 404, "RECORD_NOT_FOUND")
      expectStatus(r, 200)
      expect(r.body).toMatchObject({ id, data: { key: `read-${n}`, n } })
    })

    // each read sent after its PATCH was answered sees that PATCH, while other reads and writes run beside it
    const rounds = await times(19, async (i) => {
      const id = ids[i + 1]!
      expectStatus(await api.call("PATCH", `/records/${id}`, { data: { n: 100 + i } }), 200)
      return api.call("GET", `/records/${id}`)
    })
    rounds.forEach((r, i) => expect(r.body).toMatchObject({ version: 2, data: { n: 100 + i } }))
  })
})
