// Record constraints end to end (README: Records › Constraints, Secrets; issue 5 items 6 and 7): uniqueness, immutability,
// references with their onDelete rules and expansion, auto-increments, computed fields, and secret properties
// (encrypted at rest, masked everywhere, plaintext only with secrets:reveal).
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import {
  type Client,
  client,
  createStructure,
  database,
  expectError,
  expectStatus,
  createServiceAccountClient,
  slug
} from "./support/records.ts"
import { startServer, type TestServer } from "./support/TestServer.ts"

describe("record constraints", () => {
  let server: TestServer
  let api: Client

  const create = async (structure: string, data: Record<string, unknown>) => {
    const res = await api.call("POST", "/records", { structureId: structure, data })
    expectStatus(res, 201)
    return res.body
  }

  beforeAll(async () => {
    server = await startServer()
    api = client(server, await server.adminToken())
  })
  afterAll(async () => {
    await server?.close()
  })

  describe("uniqueness switched on an existing structure", () => {
    it("isUnique set later claims the live records' values (409 while two share one), and unset gives them up", async () => {
      const s = await createStructure(api, {
        name: "Late Unique",
        recordSlug: slug("late-unique"),
        properties: [
          { name: "code", type: "string" },
          { name: "n", type: "number" }
        ]
      })
      const prop = (isUnique: boolean) => ({ properties: [{ ...s.properties[0], isUnique }, s.properties[1]] })
      const a = await create(s.id, { code: "X", n: 1 })
      await create(s.id, { code: "Y", n: 2 })
      const c = await create(s.id, { code: "X", n: 3 })
      const refused = await api.call("PUT", `/structures/${s.id}`, prop(true))
      expectError(refused, 409, "DUPLICATE_KEY")
      expect((await api.call("GET", `/structures/${s.id}`)).body.version).toBe(1)
      expectStatus(await api.call("DELETE", `/records/${c.id}`), 200)
      expectStatus(await api.call("PUT", `/structures/${s.id}`, prop(true)), 200)
      // the existing X now holds its value: a new X is refused, an upsert on X finds it
      expectError(await api.call("POST", "/records", { structureId: s.id, data: { code: "X" } }), 409, "DUPLICATE_KEY")
      const upserted = await api.call("POST", `/records/slug/${s.recordSlug}/upsert`, { match: { code: "X" }, data: { n: 10 } })
      expectStatus(upserted, 200)
      expect(upserted.body.data.id).toBe(a.id)
      expect(upserted.body.data.version).toBe(2)
      // unset: duplicates are allowed again; set again: refused while they exist
      expectStatus(await api.call("PUT", `/structures/${s.id}`, prop(false)), 200)
      await create(s.id, { code: "X" })
      expectError(await api.call("PUT", `/structures/${s.id}`, prop(true)), 409, "DUPLICATE_KEY")
    })

    it("a renamed one-to-one reference keeps its claims", async () => {
      const target = await createStructure(api, { name: "Seat", recordSlug: slug("seat"), properties: [{ name: "label", type: "string" }] })
      const s = await createStructure(api, {
        name: "Guest",
        recordSlug: slug("guest"),
        properties: [
          { name: "seat", type: "reference", target: target.recordSlug, relationship: "one-to-one", onDelete: "set_null", nullable: true }
        ]
      })
      const seat = await create(target.id, { label: "1A" })
      await create(s.id, { seat: seat.id })
      expectStatus(await api.call("PUT", `/structures/${s.id}`, { properties: [{ ...s.properties[0], name: "place" }] }), 200)
      expectError(await api.call("POST", "/records", { structureId: s.id, data: { place: seat.id } }), 409, "DUPLICATE_KEY")
    })
  })

  describe("isUnique and immutable", () => {
    let users: { id: string; recordSlug: string }
    beforeAll(async () => {
      users = await createStructure(api, {
        name: "Account",
        recordSlug: slug("account"),
        properties: [
          { name: "email", type: "string", isUnique: true },
          { name: "handle", type: "string", immutable: true },
          { name: "score", type: "number", isUnique: true }
        ]
      })
    })

    it("a duplicate value is 409 DUPLICATE_KEY naming the field, on create and on update", async () => {
      await create(users.id, { email: "a@example.com", handle: "a" })
      const dup = await api.call("POST", "/records", { structureId: users.id, data: { email: "a@example.com", handle: "b" } })
      expectError(dup, 409, "DUPLICATE_KEY")
      expect(dup.body.message).toContain("email")
      expect(dup.body.details[0].field).toBe("data.email")
      const other = await create(users.id, { email: "b@example.com", handle: "b" })
      expectError(await api.call("PATCH", `/records/${other.id}`, { data: { email: "a@example.com" } }), 409, "DUPLICATE_KEY")
      expect((await api.call("GET", `/records/${other.id}`)).body).toMatchObject({ version: 1, data: { email: "b@example.com" } })
    })

    it('values are compared by type: 42 and "42" differ; a released value is free again', async () => {
      const s = await createStructure(api, {
        name: "Loose unique",
        recordSlug: slug("loose-unique"),
        schemaDiscoveryMode: "schemaless",
        properties: [{ name: "code", type: "string", isUnique: true }]
      })
      await create(s.id, { code: 42 })
      await create(s.id, { code: "42" })
      expectError(await api.call("POST", "/records", { structureId: s.id, data: { code: 42 } }), 409, "DUPLICATE_KEY")
      const r = await create(users.id, { email: "free@example.com", handle: "f" })
      expectStatus(await api.call("PATCH", `/records/${r.id}`, { data: { email: "moved@example.com" } }), 200)
      await create(users.id, { email: "free@example.com", handle: "g" })
      const gone = await create(users.id, { email: "deleted@example.com", handle: "h" })
      expectStatus(await api.call("DELETE", `/records/${gone.id}`), 200)
      const reused = await create(users.id, { email: "deleted@example.com", handle: "i" })
      // restoring the deleted record would break uniqueness now
      expectError(await api.call("POST", `/records/${gone.id}/restore`, {}), 409, "DUPLICATE_KEY")
      expectStatus(await api.call("DELETE", `/records/${reused.id}`), 200)
      expectStatus(await api.call("POST", `/records/${gone.id}/restore`, {}), 200)
      expectError(
        await api.call("POST", "/records", { structureId: users.id, data: { email: "deleted@example.com" } }),
        409,
        "DUPLICATE_KEY"
      )
    })

    it("an immutable field cannot change (400), but may be sent unchanged", async () => {
      const r = await create(users.id, { email: "imm@example.com", handle: "fixed" })
      const res = await api.call("PATCH", `/records/${r.id}`, { data: { handle: "moved" } })
      expectError(res, 400, "VALIDATION_ERROR")
      expect(res.body.details[0].field).toBe("data.handle")
      expectError(await api.call("PUT", `/records/${r.id}`, { data: { email: "imm@example.com" } }), 400, "VALIDATION_ERROR")
      expectStatus(await api.call("PATCH", `/records/${r.id}`, { data: { handle: "fixed", score: 7 } }), 200)
      expect((await api.call("GET", `/records/${r.id}`)).body.data.handle).toBe("fixed")
    })
  })

  describe("references", () => {
    let company: { id: string; recordSlug: string }
    let author: { id: string; recordSlug: string }
    let post: { id: string; recordSlug: string }
    let pin: { id: string; recordSlug: string }

    beforeAll(async () => {
      company = await createStructure(api, {
        name: "Company",
        recordSlug: slug("company"),
        properties: [
          { name: "name", type: "string", required: true },
          { name: "apiKey", type: "string", isSecret: true }
        ]
      })
      author = await createStructure(api, {
        name: "Author",
        recordSlug: slug("author"),
        properties: [
          { name: "name", type: "string", required: true },
          { name: "company", type: "reference", target: company.recordSlug, relationship: "many-to-one", onDelete: "cascade" }
        ]
      })
      post = await createStructure(api, {
        name: "Post",
        recordSlug: slug("post"),
        properties: [
          { name: "title", type: "string", required: true },
          { name: "author", type: "reference", target: author.recordSlug, relationship: "many-to-one", onDelete: "cascade" },
          {
            name: "editor",
            type: "reference",
            target: author.recordSlug,
            relationship: "one-to-one",
            onDelete: "set_null",
            nullable: true
          },
          {
            name: "reviewers",
            type: "reference",
            target: author.recordSlug,
            relationship: "many-to-many",
            onDelete: "set_null",
            nullable: true
          }
        ]
      })
      pin = await createStructure(api, {
        name: "Pin",
        recordSlug: slug("pin"),
        properties: [{ name: "post", type: "reference", target: post.recordSlug, relationship: "many-to-one", onDelete: "restrict" }]
      })
    })

    it("the target must exist on create and on update", async () => {
      const missing = "00000000-0000-4000-8000-000000000000"
      const res = await api.call("POST", "/records", { structureId: author.id, data: { name: "x", company: missing } })
      expectError(res, 400, "VALIDATION_ERROR")
      expect(res.body.details[0].field).toBe("data.company")
      expectError(
        await api.call("POST", "/records", { structureId: author.id, data: { name: "x", company: "not-an-id" } }),
        400,
        "VALIDATION_ERROR"
      )
      const co = await create(company.id, { name: "Acme" })
      const a = await create(author.id, { name: "Ann", company: co.id })
      expectError(await api.call("PATCH", `/records/${a.id}`, { data: { company: missing } }), 400, "VALIDATION_ERROR")
      // a record of another structure is not a target
      expectError(await api.call("PATCH", `/records/${a.id}`, { data: { company: a.id } }), 400, "VALIDATION_ERROR")
      // a deleted target no longer exists
      const co2 = await create(company.id, { name: "Gone" })
      expectStatus(await api.call("DELETE", `/records/${co2.id}`), 200)
      expectError(await api.call("PATCH", `/records/${a.id}`, { data: { company: co2.id } }), 400, "VALIDATION_ERROR")
    })

    it("one-to-one forbids two records pointing at one target (409); many-to-many holds id arrays", async () => {
      const co = await create(company.id, { name: "One" })
      const ann = await create(author.id, { name: "Ann", company: co.id })
      const bob = await create(author.id, { name: "Bob", company: co.id })
      await create(post.id, { title: "p1", author: ann.id, editor: bob.id, reviewers: [ann.id, bob.id] })
      expectError(
        await api.call("POST", "/records", { structureId: post.id, data: { title: "p2", author: ann.id, editor: bob.id } }),
        409,
        "DUPLICATE_KEY"
      )
      expectError(
        await api.call("POST", "/records", { structureId: post.id, data: { title: "p3", author: ann.id, reviewers: ann.id } }),
        400,
        "VALIDATION_ERROR"
      )
      expectError(
        await api.call("POST", "/records", {
          structureId: post.id,
          data: { title: "p4", author: ann.id, reviewers: [ann.id, "00000000-0000-4000-8000-000000000000"] }
        }),
        400,
        "VALIDATION_ERROR"
      )
      await create(post.id, { title: "p5", author: ann.id, editor: ann.id, reviewers: [] })
    })

    it("expand embeds {id, data} under data._expanded (nested with dots, arrays for many-to-many), secrets masked", async () => {
      const co = await create(company.id, { name: "Expandable", apiKey: "top-secret" })
      const ann = await create(author.id, { name: "Ann", company: co.id })
      const bob = await create(author.id, { name: "Bob", company: co.id })
      const p = await create(post.id, { title: "expanded", author: ann.id, reviewers: [ann.id, bob.id] })
      const res = await api.call("GET", `/records/${p.id}?expand=author.company,reviewers`)
      expectStatus(res, 200)
      const expanded = res.body.data._expanded
      expect(expanded.author).toMatchObject({ id: ann.id, data: { name: "Ann", company: co.id } })
      expect(expanded.author.data._expanded.company).toEqual({ id: co.id, data: { name: "Expandable", apiKey: "********" } })
      expect(expanded.reviewers.map((r: any) => r.data.name)).toEqual(["Ann", "Bob"])
      expect(res.text).not.toContain("top-secret")
      const listed = await api.call("GET", `/records?structureId=${post.id}&expand=author&filter=title:expanded`)
      expect(listed.body.results[0].data._expanded.author.id).toBe(ann.id)
      const slugList = await api.call("GET", `/records/slug/${post.recordSlug}?expand=author&title=expanded`)
      expect(slugList.body.data[0].data._expanded.author.data.name).toBe("Ann")
      const populated = await api.call(
        "GET",
        `/structures/${post.recordSlug}/records?populate=author&query=${encodeURIComponent("title=='expanded'")}`
      )
      expectStatus(populated, 200)
      // a populated record is flat, with every system field a generation A record shows
      expect(populated.body.records[0].author).toMatchObject({ id: ann.id, name: "Ann", version: 1 })
      for (const key of ["createdAt", "updatedAt", "createdBy", "updatedBy"]) expect(populated.body.records[0].author).toHaveProperty(key)
      expectError(await api.call("GET", `/records/${p.id}?expand=title`), 400)
    })

    it("onDelete: restrict is 409 and deletes nothing; cascade is transitive; set_null clears references", async () => {
      const co = await create(company.id, { name: "Cascade Co" })
      const ann = await create(author.id, { name: "Ann", company: co.id })
      const bob = await create(author.id, { name: "Bob", company: co.id })
      const carl = await create(author.id, { name: "Carl" })
      const byAnn = await create(post.id, { title: "by ann", author: ann.id })
      const byCarl = await create(post.id, { title: "by carl", author: carl.id, editor: bob.id, reviewers: [bob.id, carl.id] })
      const pinned = await create(pin.id, { post: byAnn.id })

      const blocked = await api.call("DELETE", `/records/${co.id}`)
      expectError(blocked, 409, "CONFLICT")
      for (const id of [co.id, ann.id, bob.id, byAnn.id]) expectStatus(await api.call("GET", `/records/${id}`), 200)

      expectStatus(await api.call("DELETE", `/records/${pinned.id}`), 200)
      expectStatus(await api.call("DELETE", `/records/${co.id}`), 200)
      // company -> authors (cascade) -> their posts (cascade); Carl's post loses Bob (set_null), in one new version
      for (const id of [co.id, ann.id, bob.id, byAnn.id]) expectError(await api.call("GET", `/records/${id}`), 404, "RECORD_NOT_FOUND")
      const kept = await api.call("GET", `/records/${byCarl.id}`)
      expectStatus(kept, 200)
      expect(kept.body.data).toMatchObject({ title: "by carl", author: carl.id, editor: null, reviewers: [carl.id] })
      expect(kept.body.version).toBe(2)
    })

    it("permanent cascade removes the referencing records for good", async () => {
      const co = await create(company.id, { name: "Hard Co" })
      const ann = await create(author.id, { name: "Ann", company: co.id })
      expectStatus(await api.call("DELETE", `/records/${co.id}?permanent=true`), 200)
      expectError(await api.call("GET", `/records/${ann.id}?includeDeleted=true`), 404, "RECORD_NOT_FOUND")
    })
  })

  describe("auto-increment and computed fields", () => {
    it("auto-increment assigns startAt, startAt + incrementBy, ...", async () => {
      const s = await createStructure(api, {
        name: "Ticket",
        recordSlug: slug("ticket"),
        properties: [
          { name: "title", type: "string" },
          { name: "number", type: "number", autoIncrement: { startAt: 100, incrementBy: 5 } }
        ]
      })
      const values: Array<number> = []
      for (let i = 0; i < 3; i++) values.push((await create(s.id, { title: `t${i}` })).data.number)
      expect(values).toEqual([100, 105, 110])
    })

    it("persisted computed fields are stored on write; virtual ones are computed on read; neither can be written", async () => {
      const s = await createStructure(api, {
        name: "Line",
        recordSlug: slug("line"),
        properties: [
          { name: "price", type: "number" },
          { name: "qty", type: "number" },
          { name: "title", type: "string" },
          { name: "total", type: "number", expression: "price * qty", computedMode: "persisted" },
          { name: "label", type: "string", expression: "upper(title)", computedMode: "virtual" }
        ]
      })
      const r = await create(s.id, { price: 3, qty: 4, title: "nails" })
      expect(r.data).toMatchObject({ total: 12, label: "NAILS" })
      const patched = await api.call("PATCH", `/records/${r.id}`, { data: { qty: 10, title: "screws" } })
      expect(patched.body.data).toMatchObject({ total: 30, label: "SCREWS" })
      const history = await api.call("GET", `/records/${r.id}/history`)
      expect(history.body.versions[0].data.total).toBe(30)
      expect(history.body.versions[0].data).not.toHaveProperty("label")
      const listed = await api.call("GET", `/records?structureId=${s.id}`)
      expect(listed.body.results[0].data.label).toBe("SCREWS")
      expectError(await api.call("PATCH", `/records/${r.id}`, { data: { total: 1 } }), 400, "VALIDATION_ERROR")
      expectError(
        await api.call("POST", "/records", { structureId: s.id, data: { price: 1, qty: 1, label: "x" } }),
        400,
        "VALIDATION_ERROR"
      )
    })
  })

  describe("secrets", () => {
    let vault: { id: string; recordSlug: string }
    beforeAll(async () => {
      vault = await createStructure(api, {
        name: "Vault",
        recordSlug: slug("vault"),
        properties: [
          { name: "name", type: "string" },
          { name: "password", type: "string", isSecret: true, minLength: 6, maxLength: 20 },
          {
            name: "creds",
            type: "object",
            properties: [
              { name: "user", type: "string" },
              { name: "token", type: "string", isSecret: true }
            ]
          }
        ]
      })
    })

    it("masked in responses, lists, history and changelog; plaintext only with secrets:reveal and ?reveal=true", async () => {
      const created = await api.call("POST", "/records", {
        structureId: vault.id,
        data: { name: "db", password: "hunter22", creds: { user: "root", token: "tok-abc" } }
      })
      expectStatus(created, 201)
      expect(created.body.data).toEqual({ name: "db", password: "********", creds: { user: "root", token: "********" } })
      const id = created.body.id
      const patched = await api.call("PATCH", `/records/${id}`, { data: { password: "correct-horse" } })
      expectStatus(patched, 200)
      for (const path of [
        `/records/${id}`,
        `/records/${id}/history`,
        `/records/${id}/changelog`,
        `/records?structureId=${vault.id}`,
        `/records/slug/${vault.recordSlug}`,
        `/structures/${vault.recordSlug}/records`,
        `/records/${id}?includeHistory=true&includeChangelog=true`
      ]) {
        const res = await api.call("GET", path)
        expectStatus(res, 200)
        for (const secret of ["hunter22", "correct-horse", "tok-abc", "enc:v1:"]) expect(res.text, path).not.toContain(secret)
      }
      const history = await api.call("GET", `/records/${id}/history`)
      expect(history.body.versions[0].changes.password).toEqual({ old: "********", new: "********" })
      const revealed = await api.call("GET", `/records/${id}?reveal=true`)
      expect(revealed.body.data).toEqual({ name: "db", password: "correct-horse", creds: { user: "root", token: "tok-abc" } })
      const developer = await createServiceAccountClient(server, api, { role: "developer" })
      const masked = await developer.call("GET", `/records/${id}?reveal=true`)
      expectStatus(masked, 200)
      expect(masked.body.data.password).toBe("********")
      const listedRevealed = await api.call("GET", `/records?structureId=${vault.id}&reveal=true`)
      expect(listedRevealed.body.results[0].data.creds.token).toBe("tok-abc")
    })

    it("constraints apply to the plaintext; writing the mask back keeps the stored secret", async () => {
      expectError(await api.call("POST", "/records", { structureId: vault.id, data: { password: "short" } }), 400, "VALIDATION_ERROR")
      const r = await api.call("POST", "/records", { structureId: vault.id, data: { name: "a", password: "longenough" } })
      expectStatus(r, 201)
      const renamed = await api.call("PATCH", `/records/${r.body.id}`, { data: { name: "b" } })
      expectStatus(renamed, 200)
      const echoed = await api.call("PUT", `/records/${r.body.id}`, { data: { ...renamed.body.data, name: "c" } })
      expectStatus(echoed, 200)
      expect(echoed.body.data).toEqual({ name: "c", password: "********" })
      const history = await api.call("GET", `/records/${r.body.id}/history`)
      expect(Object.keys(history.body.versions[0].changes)).toEqual(["name"])
      expect((await api.call("GET", `/records/${r.body.id}?reveal=true`)).body.data.password).toBe("longenough")
    })

    it.runIf(process.env.DATABASE_URL)(
      "is stored AES-256-GCM encrypted, in rows, versions and events (PostgreSQL run: the database is readable)",
      async () => {
        const r = await api.call("POST", "/records", {
          structureId: vault.id,
          data: { name: "raw", password: "plain-text-pw", creds: { token: "raw-token" } }
        })
        expectStatus(r, 201)
        const sql = database(server)
        try {
          const [row] = await sql`SELECT data::text AS data FROM records WHERE id = ${r.body.id}`
          expect(row!.data).not.toContain("plain-text-pw")
          expect(row!.data).not.toContain("raw-token")
          expect(JSON.parse(row!.data).password).toMatch(/^enc:v1:/)
          const versions = await sql`SELECT data::text AS data FROM record_versions WHERE record_id = ${r.body.id}`
          for (const v of versions) expect(v.data).not.toContain("plain-text-pw")
          const events = await sql`SELECT payload::text AS payload FROM events WHERE record_id = ${r.body.id}`
          expect(events.length).toBeGreaterThan(0)
          for (const e of events) {
            expect(e.payload).not.toContain("plain-text-pw")
            expect(e.payload).not.toContain("enc:v1:")
          }
        } finally {
          await sql.end()
        }
      }
    )
  })
})
