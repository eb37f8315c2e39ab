// Records that point at files (docs/storage.md, "Records that point at files") through HTTP, on PGlite or on
// PostgreSQL (DATABASE_URL): a `format: "file"` string must name a file of the workspace on create, update, upsert
// and bulk (400 VALIDATION_ERROR naming the field); `expand` embeds the file object; deleting the file applies the
// property's onDelete (restrict → 409, set_null → a new version with null, cascade → the records deleted).
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Client, client, createStructure, expectError, expectStatus, slug } from "./support/records.ts"
import { startServer, type TestServer } from "./support/TestServer.ts"

let server: TestServer
let api: Client

beforeAll(async () => {
  server = await startServer()
  api = client(server, await server.adminToken())
}, 300_000)

afterAll(async () => {
  await server?.close()
})

const storageBase = () => server.base.replace(/^\/workspace\//, "/storage/workspace/")

const upload = async (name: string, text = "hello") => {
  const form = new FormData()
  form.append("file", new Blob([text], { type: "text/plain" }), name)
  const res = await fetch(`${server.baseUrl}${storageBase()}/upload`, {
    method: "POST",
    headers: { authorization: `Bearer ${api.token}` },
    body: form
  })
  expect(res.status).toBe(201)
  return (await res.json()) as { id: string; name: string }
}

const deleteFile = (id: string) => server.request("DELETE", `${storageBase()}/files/${id}`, { token: api.token })

const withFile = (onDelete: string, extra: Record<string, unknown> = {}) =>
  createStructure(api, {
    name: `Doc ${onDelete}`,
    recordSlug: slug(`doc-${onDelete.replace("_", "")}`),
    properties: [
      { name: "title", type: "string", isUnique: true },
      { name: "attachment", type: "string", format: "file", onDelete, nullable: true, ...extra }
    ]
  })

describe("format: file", () => {
  it("is a top-level string only, with onDelete set_null needing nullable", async () => {
    const nested = await api.call("POST", "/structures", {
      name: "Nested file",
      recordSlug: slug("nested"),
      properties: [{ name: "o", type: "object", properties: [{ name: "f", type: "string", format: "file" }] }]
    })
    expectError(nested, 400)
    expect(nested.body.details.map((d: any) => d.field)).toContain("properties[0].properties[0].format")
    const items = await api.call("POST", "/structures", {
      name: "Items file",
      recordSlug: slug("items"),
      properties: [{ name: "a", type: "array", items: { type: "string", format: "file" } }]
    })
    expectError(items, 400)
    const notNullable = await api.call("POST", "/structures", {
      name: "Set null",
      recordSlug: slug("setnull"),
      properties: [{ name: "f", type: "string", format: "file", onDelete: "set_null" }]
    })
    expectError(notNullable, 400)
    expect(notNullable.body.details[0].field).toBe("properties[0].onDelete")
    const onPlain = await api.call("POST", "/structures", {
      name: "Plain",
      recordSlug: slug("plain"),
      properties: [{ name: "s", type: "string", onDelete: "cascade" }]
    })
    expectError(onPlain, 400)
  })

  it("accepts files of the workspace on create, update, upsert and bulk, and refuses anything else", async () => {
    const s = await withFile("restrict")
    const file = await upload("a.txt")
    const created = await api.call("POST", "/records", { structureId: s.id, data: { title: "one", attachment: file.id } })
    expectStatus(created, 201)
    const unknown = "00000000-0000-4000-8000-000000000000"
    const refusals = [
      await api.call("POST", "/records", { structureId: s.id, data: { title: "two", attachment: unknown } }),
      await api.call("POST", "/records", { structureId: s.id, data: { title: "three", attachment: "not-a-uuid" } }),
      await api.call("PATCH", `/records/${created.body.id}`, { data: { attachment: unknown } }),
      await api.call("POST", `/records/slug/${s.recordSlug}/upsert`, { match: { title: "four" }, data: { attachment: unknown } }),
      await api.call("POST", `/records/slug/${s.recordSlug}/upsert`, { match: { title: "one" }, data: { attachment: unknown } }),
      await api.call("POST", "/records/bulk", { structureId: s.id, records: [{ data: { title: "five", attachment: unknown } }] })
    ]
    for (const res of refusals) {
      expectError(res, 400, "VALIDATION_ERROR")
      expect(JSON.stringify(res.body.details)).toContain("attachment")
    }
    // a deleted file is no file
    const gone = await upload("gone.txt")
    expectStatus(await deleteFile(gone.id), 200)
    expectError(
      await api.call("POST", "/records", { structureId: s.id, data: { title: "six", attachment: gone.id } }),
      400,
      "VALIDATION_ERROR"
    )
    // the good ones pass everywhere
    const other = await upload("b.txt")
    expectStatus(await api.call("PATCH", `/records/${created.body.id}`, { data: { attachment: other.id } }), 200)
    expectStatus(
      await api.call("POST", `/records/slug/${s.recordSlug}/upsert`, { match: { title: "seven" }, data: { attachment: file.id } }),
      201
    )
    expectStatus(
      await api.call("POST", "/records/bulk", { structureId: s.id, records: [{ data: { title: "eight", attachment: file.id } }] }),
      201
    )
    expectStatus(await api.call("POST", "/records", { structureId: s.id, data: { title: "nine", attachment: null } }), 201)
  })

  it("expand embeds the file object, as GET /files/{id}/metadata shows it", async () => {
    const s = await withFile("restrict")
    const file = await upload("expand.txt", "expand me")
    const r = await api.call("POST", "/records", { structureId: s.id, data: { title: "x", attachment: file.id } })
    const metadata = await server.request("GET", `${storageBase()}/files/${file.id}/metadata`, { token: api.token })
    const one = await api.call("GET", `/records/${r.body.id}?expand=attachment`)
    expectStatus(one, 200)
    expect(one.body.data.attachment).toBe(file.id)
    expect(one.body.data._expanded.attachment).toEqual(metadata.body)
    const listed = await api.call("GET", `/records?structureId=${s.id}&expand=attachment`)
    expect(listed.body.results[0].data._expanded.attachment).toEqual(metadata.body)
    const bySlug = await api.call("GET", `/records/slug/${s.recordSlug}?expand=attachment`)
    expect(bySlug.body.data[0].data._expanded.attachment.name).toBe("expand.txt")
    const populated = await api.call("GET", `/structures/${s.recordSlug}/records?populate=attachment`)
    expectStatus(populated, 200)
    expect(populated.body.records[0].attachment).toEqual(metadata.body)
    expectError(await api.call("GET", `/records/${r.body.id}?expand=attachment.name`), 400)
  })

  it("restrict: the file's delete is refused (409) while a record names it", async () => {
    const s = await withFile("restrict")
    const file = await upload("kept.txt")
    const r = await api.call("POST", "/records", { structureId: s.id, data: { title: "r", attachment: file.id } })
    const refused = await deleteFile(file.id)
    expectError(refused, 409, "CONFLICT")
    expect(refused.body.details[0].field).toBe(`${s.recordSlug}.${r.body.id}.attachment`)
    expect((await server.request("GET", `${storageBase()}/files/${file.id}/metadata`, { token: api.token })).status).toBe(200)
    expectStatus(await api.call("DELETE", `/records/${r.body.id}`), 200)
    expectStatus(await deleteFile(file.id), 200)
  })

  it("set_null: the records' property becomes null in a new version", async () => {
    const s = await withFile("set_null")
    const file = await upload("cleared.txt")
    const r = await api.call("POST", "/records", { structureId: s.id, data: { title: "r", attachment: file.id } })
    expectStatus(await deleteFile(file.id), 200)
    const after = await api.call("GET", `/records/${r.body.id}`)
    expect(after.body.data.attachment).toBeNull()
    expect(after.body.version).toBe(2)
  })

  it("cascade: the records naming the file are deleted with it", async () => {
    const s = await withFile("cascade")
    const file = await upload("cascade.txt")
    const kept = await upload("other.txt")
    const a = await api.call("POST", "/records", { structureId: s.id, data: { title: "a", attachment: file.id } })
    const b = await api.call("POST", "/records", { structureId: s.id, data: { title: "b", attachment: kept.id } })
    expectStatus(await deleteFile(file.id), 200)
    expect((await api.call("GET", `/records/${a.body.id}`)).status).toBe(404)
    expectStatus(await api.call("GET", `/records/${b.body.id}`), 200)
  })
})
