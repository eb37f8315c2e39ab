// Data intelligence end to end (CONTRACT §8.4, docs/intelligence.md) on seeded generated data with known answers:
// a field that is 100 % emails and one that is 98 % numbers (schema discovery), 2 outliers planted in 1,000 normal
// values (anomaly insights, with anomaly.detected reaching a webhook), 3 planted misspellings (validation checks);
// the model path against a scripted chat-completions server (malformed JSON, a timeout and a 429 each a clear batch
// error, never a write); and bad input answered 4xx with the contract's body. Runs on PGlite, or PostgreSQL with
// DATABASE_URL.
import * as Http from "node:http"
import type * as Net from "node:net"
import * as Os from "node:os"
import * as Path from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { computeClient, fn } from "./support/compute.ts"
import { createAccount, createUser } from "./support/IdentityHelpers.ts"
import { openSse } from "./support/SseClient.ts"
import { startServer, type TestServer } from "./support/TestServer.ts"
import { runTroupe } from "./support/TroupeCli.ts"
import { eventually, sleep } from "./support/wait.ts"
import { type Receiver, startReceiver } from "./support/WebhookReceiver.ts"

let server: TestServer
let token: string
let receiver: Receiver
let model: { url: string; answer: (body: any) => Promise<{ status: number; body: string }>; calls: number; close: () => Promise<void> }

const startModel = async () => {
  const state = {
    calls: 0,
    answer: async (_body: any) => ({ status: 200, body: JSON.stringify({ choices: [{ message: { content: '{"suggestions":[]}' } }] }) })
  }
  const http = Http.createServer((req, res) => {
    let raw = ""
    req.on("data", (c) => (raw += c))
    req.on("end", async () => {
      state.calls++
      const a = await state.answer(JSON.parse(raw))
      if (!res.destroyed) res.writeHead(a.status, { "content-type": "application/json" }).end(a.body)
    })
  })
  await new Promise<void>((r) => http.listen(0, "127.0.0.1", () => r()))
  const url = `http://127.0.0.1:${(http.address() as Net.AddressInfo).port}/v1`
  return Object.assign(state, {
    url,
    close: () =>
      new Promise<void>((r) => {
        http.closeAllConnections()
        http.close(() => r())
      })
  }) as typeof model
}

beforeAll(async () => {
  model = await startModel()
  server = await startServer({ env: { TROUPE_AI_URL: model.url, TROUPE_AI_MODEL: "test-model", TROUPE_AI_TIMEOUT_SECONDS: "1" } })
  token = await server.adminToken()
  receiver = await startReceiver()
}, 300_000)

afterAll(async () => {
  await receiver?.close()
  await model?.close()
  await server?.close()
})

const call = (method: string, path: string, body?: unknown) =>
  server.request(method, `${server.base}${path}`, { token, ...(body === undefined ? {} : { body }) })

/** A deterministic pseudo-random sequence (tests must not depend on Math.random). */
const rng = (seed: number) => () => {
  seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31
  return seed / 2 ** 31
}

const structure = async (slug: string, properties: Array<Record<string, unknown>>, mode = "strict") => {
  const res = await call("POST", "/structures", { name: slug, recordSlug: slug, properties, schemaDiscoveryMode: mode })
  expect(res.status, res.text).toBeLessThan(300)
  return res.body
}

const seed = async (slug: string, rows: Array<Record<string, unknown>>) => {
  const ids: Array<string> = []
  for (let i = 0; i < rows.length; i += 100) {
    const res = await call("POST", "/records/bulk", { structureId: slug, records: rows.slice(i, i + 100).map((data) => ({ data })) })
    expect(res.status, res.text).toBeLessThan(300)
    const created = res.body.results ?? res.body.records ?? res.body.data ?? res.body.created
    ids.push(...created.map((r: any) => r.id ?? r.record?.id))
  }
  return ids
}

const finished = (jobId: string) =>
  eventually(async () => {
    const res = await call("GET", `/intelligence-jobs/${jobId}`)
    expect(res.status, res.text).toBe(200)
    return res.body.status === "completed" || res.body.status === "failed" ? res.body : undefined
  }, 120_000)

const batchDone = (batchId: string) =>
  eventually(async () => {
    const res = await call("GET", `/ai-validation/batch/${batchId}`)
    expect(res.status, res.text).toBe(200)
    return res.body.status === "completed" || res.body.status === "failed" ? res.body : undefined
  }, 120_000)

const expectBadRequest = (res: { status: number; body: any; text: string }, field: string) => {
  expect(res.status, res.text).toBe(400)
  expect(res.body).toMatchObject({ statusCode: 400, code: "VALIDATION_ERROR" })
  expect(typeof res.body.requestId).toBe("string")
  expect(res.body.details.map((d: any) => d.field)).toContain(field)
}

describe("schema discovery", () => {
  it("suggests the email format (100 %) and a number property (98 %), accepts through a new structure version, never twice", async () => {
    const s = await structure("signups", [{ name: "email", type: "string" }], "auto-evolving")
    const rows = Array.from({ length: 100 }, (_, i) => ({ email: `user${i}@example.com`, score: i < 98 ? i * 1.5 : "n/a" }))
    await seed("signups", rows)

    const settings = await call("GET", "/collections/signups/schema-discovery")
    expect(settings.body).toEqual({
      mode: "auto-evolving",
      config: { batchSize: 10, maxKeysPerRecord: 100, maxNestingDepth: 3, maxStringLengthSampled: 1000 },
      autoApply: false
    })

    const scan = await call("POST", "/collections/signups/schema-discovery/scan")
    expect(scan.status, scan.text).toBe(202)
    const job = await finished(scan.body.jobId)
    expect(job).toMatchObject({ status: "completed", scanned: 100, kind: "discovery_scan" })

    const list = await call("GET", "/collections/signups/schema-suggestions")
    expect(list.status).toBe(200)
    const byKind = (kind: string, name: string) => list.body.data.find((x: any) => x.kind === kind && x.property.name === name)
    const format = byKind("add_format", "email")
    expect(format).toMatchObject({
      confidence: 1,
      sampleCount: 100,
      status: "pending",
      property: { name: "email", type: "string", format: "email" }
    })
    expect(format.explanation).toContain("100 values are emails")
    const score = byKind("add_property", "score")
    expect(score).toMatchObject({ confidence: 0.98, sampleCount: 100, property: { name: "score", type: "number" } })
    expect(score.explanation).toContain("98 of 100 values are numbers")

    // accept: the structure's next version has the property
    const accepted = await call("POST", `/collections/signups/schema-suggestions/${score.id}/accept`)
    expect(accepted.status, accepted.text).toBe(200)
    expect(accepted.body.suggestion.status).toBe("accepted")
    expect(accepted.body.structure.version).toBe(s.version + 1)
    expect(accepted.body.structure.properties.map((p: any) => p.name)).toEqual(["email", "score"])

    // the same suggestion again: 409 (already accepted); a rescan offers nothing twice
    expect((await call("POST", `/collections/signups/schema-suggestions/${score.id}/accept`)).status).toBe(409)
    const required = byKind("set_required", "email")
    expect(required).toBeDefined()
    expect((await call("POST", `/collections/signups/schema-suggestions/${required.id}/reject`)).body.status).toBe("rejected")
    const again = await call("POST", "/collections/signups/schema-discovery/scan")
    await finished(again.body.jobId)
    const after = await call("GET", "/collections/signups/schema-suggestions")
    const signatures = after.body.data.map((x: any) => `${x.kind}:${x.property.name}`)
    expect(new Set(signatures).size).toBe(signatures.length)
    expect(after.body.data.find((x: any) => x.id === required.id).status).toBe("rejected")

    // a suggestion that conflicts with the current definition: 409 naming it
    const manual = await call("PUT", `/structures/${s.id}`, {
      properties: accepted.body.structure.properties.map((p: any) => (p.name === "email" ? { ...p, format: "email" } : p))
    })
    expect(manual.status, manual.text).toBe(200)
    const conflict = await call("POST", `/collections/signups/schema-suggestions/${format.id}/accept`)
    expect(conflict.status, conflict.text).toBe(409)
    expect(conflict.body).toMatchObject({ statusCode: 409, code: "CONFLICT" })
    expect(conflict.body.message).toContain("`email` already has the format email")
  }, 180_000)

  it("profiles writes of undeclared fields off the request path and infers on trigger", async () => {
    await structure("events-log", [{ name: "name", type: "string" }], "schemaless")
    await seed(
      "events-log",
      Array.from({ length: 12 }, (_, i) => ({ name: `e${i}`, site: `https://example.com/${i}` }))
    )
    const suggestion = await eventually(async () => {
      const trigger = await call("POST", "/collections/events-log/schema-discovery/trigger")
      expect(trigger.status).toBe(202)
      await finished(trigger.body.jobId)
      const list = await call("GET", "/collections/events-log/schema-suggestions?status=pending")
      return list.body.data.find((x: any) => x.kind === "add_property" && x.property.name === "site")
    }, 60_000)
    expect(suggestion.property).toEqual({ name: "site", type: "string", format: "url" })
  }, 120_000)
})

describe("a new key inside a declared object", () => {
  it("is proposed under its path from a scan and from observed writes; accepting adds it inside the object", async () => {
    const s = await structure(
      "addresses",
      [
        { name: "label", type: "string" },
        {
          name: "address",
          type: "object",
          properties: [
            { name: "street", type: "string" },
            { name: "city", type: "string" }
          ]
        }
      ],
      "auto-evolving"
    )
    await seed(
      "addresses",
      Array.from({ length: 20 }, (_, i) => ({
        label: `home ${i}`,
        address: { street: `Main St ${i}`, city: "Utrecht", zip: `35${10 + i}AB`, geo: { lat: 52 + i / 100, lng: 5.1 } }
      }))
    )
    const scan = await call("POST", "/collections/addresses/schema-discovery/scan")
    expect(await finished(scan.body.jobId)).toMatchObject({ status: "completed", scanned: 20 })
    const list = await call("GET", "/collections/addresses/schema-suggestions?status=pending")
    const additions = list.body.data.filter((x: any) => x.kind === "add_property")
    // the new keys of the declared object; nothing for its declared keys, nor for keys inside the new `geo`
    expect(additions.map((x: any) => x.property.name).sort()).toEqual(["address.geo", "address.zip"])
    const zip = additions.find((x: any) => x.property.name === "address.zip")
    expect(zip).toMatchObject({ confidence: 1, sampleCount: 20, property: { name: "address.zip", type: "string" } })
    expect(zip.explanation).toBe("`address.zip` appears in 20 of 20 records and all 20 values are strings.")
    expect(additions.find((x: any) => x.property.name === "address.geo").property).toEqual({
      name: "address.geo",
      type: "object",
      properties: [
        { name: "lat", type: "number" },
        { name: "lng", type: "number" }
      ]
    })

    const accepted = await call("POST", `/collections/addresses/schema-suggestions/${zip.id}/accept`)
    expect(accepted.status, accepted.text).toBe(200)
    expect(accepted.body.structure.version).toBe(s.version + 1)
    const address = accepted.body.structure.properties.find((p: any) => p.name === "address")
    expect(address.properties.map((p: any) => `${p.name}:${p.type}`)).toEqual(["street:string", "city:string", "zip:string"])
    // the nested property is enforced now: a number there is refused
    const refused = await call("POST", "/records", { structureId: "addresses", data: { label: "x", address: { street: "a", zip: 5 } } })
    expect(refused.status, refused.text).toBe(400)
    expect(refused.text).toContain("address.zip")

    // observed writes (another structure: sampling allows 20 records per structure per second): only the new
    // nested key is sampled, and `trigger` proposes it
    await structure(
      "addresses-observed",
      [{ name: "address", type: "object", properties: [{ name: "street", type: "string" }] }],
      "schemaless"
    )
    await seed(
      "addresses-observed",
      Array.from({ length: 12 }, (_, i) => ({ address: { street: `W ${i}`, country: "NL" } }))
    )
    const country = await eventually(async () => {
      const trigger = await call("POST", "/collections/addresses-observed/schema-discovery/trigger")
      await finished(trigger.body.jobId)
      const pending = await call("GET", "/collections/addresses-observed/schema-suggestions?status=pending")
      return pending.body.data.find((x: any) => x.property.name === "address.country")
    }, 60_000)
    expect(country).toMatchObject({ kind: "add_property", sampleCount: 12, property: { name: "address.country", type: "string" } })
    const observed = await call("GET", "/collections/addresses-observed/field-profiles")
    expect(Object.keys(observed.body.observed.fields)).toEqual(["address.country"])
  }, 180_000)
})

describe("following the data (auto-evolving, autoApply on)", () => {
  it("adds a confident new property by itself, through a new structure version", async () => {
    const s = await structure("visits", [{ name: "path", type: "string" }], "auto-evolving")
    const settings = await call("PUT", "/collections/visits/schema-discovery", { autoApply: true, config: { batchSize: 5 } })
    expect(settings.body).toMatchObject({ mode: "auto-evolving", autoApply: true, config: { batchSize: 5 } })
    await seed(
      "visits",
      Array.from({ length: 6 }, (_, i) => ({ path: `/p/${i}`, durationMs: 100 + i }))
    )
    const grown = await eventually(async () => {
      const res = await call("GET", `/structures/${s.id}`)
      return res.body.properties.some((p: any) => p.name === "durationMs") ? res.body : undefined
    }, 60_000)
    expect(grown.properties.find((p: any) => p.name === "durationMs")).toMatchObject({ type: "number", integer: true })
    expect(grown.version).toBeGreaterThan(s.version)
    const list = await call("GET", "/collections/visits/schema-suggestions?status=accepted")
    expect(list.body.data.map((x: any) => x.property.name)).toEqual(["durationMs"])
  }, 120_000)
})

describe("anomaly insights", () => {
  it("finds the 2 planted outliers among 1,000 normal values, tells webhooks, and never raises a dismissed one again", async () => {
    await structure("readings", [
      { name: "amount", type: "number" },
      { name: "country", type: "string" }
    ])
    const hook = await call("POST", "/webhooks", { name: "anomalies", url: `${receiver.url}/anomalies`, events: ["anomaly.detected"] })
    expect(hook.status, hook.text).toBeLessThan(300)
    const random = rng(7)
    const countries = ["Germany", "France", "Spain"]
    const rows: Array<Record<string, unknown>> = Array.from({ length: 1000 }, (_, i) => ({
      // a sum of uniforms: roughly normal around 100, never beyond 70..130
      amount: Math.round((70 + 60 * ((random() + random() + random()) / 3)) * 100) / 100,
      country: countries[i % 3]
    }))
    rows.splice(250, 0, { amount: 9_850, country: "Germany" })
    rows.splice(700, 0, { amount: -400, country: "France" })
    const ids = await seed("readings", rows)
    const planted = [ids[250], ids[700]]

    expectBadRequest(await call("PUT", "/collections/readings/anomaly-config", { sensitivity: -1 }), "sensitivity")
    expectBadRequest(await call("PUT", "/collections/readings/anomaly-config", { fields: ["amount", "nope"] }), "fields[1]")
    const config = await call("PUT", "/collections/readings/anomaly-config", { enabled: true, fields: ["amount"] })
    expect(config.body).toEqual({ enabled: true, fields: ["amount"], sensitivity: 3.5 })

    const run = await call("POST", "/collections/readings/anomaly-analysis")
    expect(run.status).toBe(202)
    expect(await finished(run.body.jobId)).toMatchObject({ status: "completed", scanned: 1002, produced: 2 })
    const list = await call("GET", "/anomaly-insights?collection=readings")
    expect(list.body.total).toBe(2)
    expect(list.body.data.map((i: any) => i.recordId).sort()).toEqual([...planted].sort())
    for (const insight of list.body.data) {
      expect(insight).toMatchObject({ kind: "outlier", field: "amount", status: "open", severity: "high" })
      expect(insight.message).toContain("most of its 1002 values lie between")
    }
    await receiver.waitFor((hits) => hits.filter((h) => h.json?.event === "anomaly.detected").length >= 2, 30_000)

    const [first, second] = list.body.data
    expect((await call("POST", `/anomaly-insights/${first.id}/dismiss`)).body.status).toBe("dismissed")
    expect((await call("POST", `/anomaly-insights/${second.id}/acknowledge`)).body.status).toBe("acknowledged")
    const rerun = await call("POST", "/collections/readings/anomaly-analysis")
    expect(await finished(rerun.body.jobId)).toMatchObject({ status: "completed", produced: 0 })
    const again = await call("GET", "/anomaly-insights?collection=readings&status=dismissed")
    expect(again.body.data.map((i: any) => i.id)).toEqual([first.id])
    expect((await call("GET", `/anomaly-insights/${second.id}`)).body.status).toBe("acknowledged")
  }, 180_000)
})

describe("anomaly.detected reaches SSE and event triggers", () => {
  it("an outlier found by an analysis is an SSE event of its structure and fires an anomaly_detected trigger", async () => {
    await structure("audit", [{ name: "payload", type: "string" }])
    await structure("meters", [{ name: "kwh", type: "number" }])
    const c = computeClient(server, token)
    const audit = await c.createFunction(
      "audit-anomaly",
      fn("await api.createRecord('audit', { payload: JSON.stringify(executionParams) })\n  return { success: true }")
    )
    const trigger = await c.createTrigger({
      name: "on-anomaly",
      functionId: audit.id,
      executionType: "event-driven",
      triggerMetadata: { event: "anomaly_detected", recordSlug: "meters" }
    })
    expect(trigger.id).toBeDefined()
    const sse = await openSse(`${server.baseUrl}/realtime/workspace/${server.workspace}/api/v1/events?structure=meters`, {
      authorization: `Bearer ${token}`
    })
    expect(sse.status).toBe(200)
    const ids = await seed("meters", [...Array.from({ length: 40 }, (_, i) => ({ kwh: 10 + (i % 5) })), { kwh: 5000 }])
    const run = await call("POST", "/collections/meters/anomaly-analysis")
    expect(await finished(run.body.jobId)).toMatchObject({ status: "completed", produced: 1 })
    await sse.waitFor((messages) => messages.some((m) => m.json?.event === "anomaly.detected"), 30_000, "anomaly.detected on SSE")
    const event = sse.messages.find((m) => m.json?.event === "anomaly.detected")!
    expect(event.json.data.insight).toMatchObject({ kind: "outlier", field: "kwh", recordId: ids[40], observed: 5000 })
    sse.close()
    const audited = await eventually(async () => {
      const res = await call("GET", "/records?structureId=audit&limit=10")
      return res.body.results?.length > 0 ? res.body.results : undefined
    }, 60_000)
    const params = JSON.parse(audited[0].data.payload)
    expect(params.event).toBe("anomaly_detected")
    expect(params.recordSlug).toBe("meters")
  }, 180_000)
})

describe("validation suggestions", () => {
  it("finds the 3 planted misspellings; accepting one is a record update, rejecting one is remembered", async () => {
    await structure("customers", [
      { name: "country", type: "string" },
      { name: "note", type: "string" }
    ])
    const countries = ["Germany", "France", "Spain", "Italy"]
    const rows: Array<Record<string, unknown>> = Array.from({ length: 200 }, (_, i) => ({ country: countries[i % 4], note: "ok" }))
    rows[10] = { country: "Germny", note: "ok" }
    rows[20] = { country: "Frence", note: "ok" }
    rows[30] = { country: "Itally", note: "ok" }
    const ids = await seed("customers", rows)

    expectBadRequest(await call("PUT", "/collections/customers/ai-config", { fields: ["nowhere"] }), "fields[0]")
    expect((await call("PUT", "/collections/customers/ai-config", { enabled: true, fields: ["country"] })).status).toBe(200)
    const scan = await call("POST", "/collections/customers/ai-validation/scan")
    expect(scan.status).toBe(202)
    const batch = await batchDone(scan.body.batchId)
    expect(batch).toMatchObject({ status: "completed", scanned: 200, suggestions: 3, error: null })

    const list = await call("GET", "/ai-validation/suggestions?collection=customers")
    expect(list.status, list.text).toBe(200)
    const found = Object.fromEntries(list.body.data.map((s: any) => [s.currentValue, s]))
    expect(Object.keys(found).sort()).toEqual(["Frence", "Germny", "Itally"])
    expect(found.Germny).toMatchObject({
      suggestedValue: "Germany",
      source: "check",
      status: "pending",
      recordId: ids[10],
      field: "country"
    })
    expect(found.Germny.reason).toContain("probably a misspelling")

    const accepted = await call("POST", `/ai-validation/suggestions/${found.Germny.id}/accept`)
    expect(accepted.status, accepted.text).toBe(200)
    expect(accepted.body.status).toBe("accepted")
    const record = await call("GET", `/records/${ids[10]}`)
    expect(record.body.data.country).toBe("Germany")
    expect(record.body.version).toBe(2)

    expect((await call("POST", `/ai-validation/suggestions/${found.Frence.id}/reject`)).body.status).toBe("rejected")

    // permissions: a viewer reads but does not scan; accepting also needs write:records
    const viewer = await createUser(server, token, "viewer")
    const asViewer = (method: string, path: string) => server.request(method, `${server.base}${path}`, { token: viewer.token })
    expect((await asViewer("GET", "/ai-validation/suggestions")).status).toBe(200)
    expect((await asViewer("POST", "/collections/customers/ai-validation/scan")).status).toBe(403)
    const schemaOnly = await createAccount(server, token, { name: "schema-only", permissions: ["read:structures", "write:structures"] })
    const refused = await server.request("POST", `${server.base}/ai-validation/suggestions/${found.Itally.id}/accept`, {
      token: schemaOnly.token
    })
    expect(refused.status, refused.text).toBe(403)
    expect(refused.body.code).toBe("PERMISSION_DENIED")
    const rescan = await call("POST", "/collections/customers/ai-validation/scan")
    expect(await batchDone(rescan.body.batchId)).toMatchObject({ status: "completed", suggestions: 0 })
  }, 180_000)

  it("the model's answers: a valid one is a suggestion, never a write; malformed JSON, a timeout and a 429 fail the batch clearly", async () => {
    await structure("products", [{ name: "title", type: "string" }])
    const ids = await seed(
      "products",
      Array.from({ length: 5 }, (_, i) => ({ title: i === 2 ? "cheap!!! buy now" : `Product ${i}` }))
    )
    expect(
      (await call("PUT", "/collections/products/ai-config", { enabled: true, rules: ["Titles are calm: no exclamation marks"] })).status
    ).toBe(200)

    model.answer = async (body) => {
      const records = JSON.parse(body.messages[1].content).records as Array<{ recordId: string; data: any }>
      const bad = records.find((r) => String(r.data.title).includes("!"))!
      const content = JSON.stringify({
        suggestions: [{ recordId: bad.recordId, field: "title", suggestedValue: "Cheap, buy now", reason: "No exclamation marks." }]
      })
      return { status: 200, body: JSON.stringify({ choices: [{ message: { content } }], usage: { total_tokens: 120 } }) }
    }
    const ok = await batchDone((await call("POST", "/collections/products/ai-validation/scan")).body.batchId)
    expect(ok).toMatchObject({ status: "completed", suggestions: 1 })
    const list = await call("GET", "/ai-validation/suggestions?collection=products")
    expect(list.body.data[0]).toMatchObject({ source: "model", recordId: ids[2], suggestedValue: "Cheap, buy now", status: "pending" })
    expect((await call("GET", `/records/${ids[2]}`)).body.version).toBe(1)

    const failing = async (answer: typeof model.answer, message: string) => {
      model.answer = answer
      const batch = await batchDone((await call("POST", "/collections/products/ai-validation/scan")).body.batchId)
      expect(batch.status).toBe("failed")
      expect(batch.error).toContain(message)
    }
    await failing(
      async () => ({ status: 200, body: JSON.stringify({ choices: [{ message: { content: "sure! here you go: {" } }] }) }),
      "not the expected JSON"
    )
    await failing(async () => ({ status: 429, body: "{}" }), "rate limited")
    await failing(async () => {
      await sleep(2500)
      return { status: 200, body: "{}" }
    }, "no answer within 1 s")
    for (const id of ids) expect((await call("GET", `/records/${id}`)).body.version).toBe(1)
  }, 180_000)
})

describe("functions' api.intelligence", () => {
  it("starts jobs, lists and resolves suggestions, insights and corrections as the run's principal", async () => {
    const created = await structure(
      "fnintel",
      [
        { name: "email", type: "string" },
        { name: "kwh", type: "number" },
        { name: "country", type: "string" }
      ],
      "auto-evolving"
    )
    const rows = Array.from({ length: 40 }, (_, i) => ({
      email: `fn${i}@example.com`,
      kwh: 10 + (i % 5),
      country: i % 2 === 0 ? "Germany" : "France",
      score: i
    }))
    rows[17]!.kwh = 5000
    rows[23]!.country = "France  "
    const ids = await seed("fnintel", rows)
    const c = computeClient(server, token)

    const started = await c.runCode(
      fn(`const scan = await api.intelligence.scan("fnintel")
const analysis = await api.intelligence.analyze("fnintel")
const check = await api.intelligence.validate("fnintel")
const trigger = await api.intelligence.trigger("fnintel")
const job = await api.intelligence.job(scan.jobId)
return { scan: scan.jobId, analysis: analysis.jobId, check: check.batchId, trigger: trigger.jobId, kind: job.kind }`)
    )
    expect(started.status, JSON.stringify(started)).toBe("completed")
    const jobs = started.result
    expect(jobs.kind).toBe("discovery_scan")
    expect(await finished(jobs.scan)).toMatchObject({ status: "completed", scanned: 40, kind: "discovery_scan" })
    expect(await finished(jobs.analysis)).toMatchObject({ status: "completed", scanned: 40, produced: 1 })
    expect(await finished(jobs.check)).toMatchObject({ status: "completed", kind: "validation_scan" })
    expect(await finished(jobs.trigger)).toMatchObject({ status: "completed", kind: "discovery_trigger" })

    const resolved = await c.runCode(
      fn(`const pending = await api.intelligence.suggestions("fnintel", { status: "pending", limit: 100 })
const score = pending.data.find((s) => s.kind === "add_property" && s.property.name === "score")
const format = pending.data.find((s) => s.kind === "add_format" && s.property.name === "email")
const accepted = await api.intelligence.acceptSuggestion(score.id)
const rejected = await api.intelligence.rejectSuggestion(format.id)
const open = await api.intelligence.insights("fnintel", { status: "open" })
const acknowledged = await api.intelligence.acknowledgeInsight(open.data[0].id)
const corrections = await api.intelligence.corrections("fnintel", { status: "pending" })
const spaces = corrections.data.find((x) => x.field === "country")
const corrected = await api.intelligence.acceptCorrection(spaces.id)
const dismissed = await api.intelligence.dismissInsight(acknowledged.id)
let again
try { await api.intelligence.rejectCorrection(spaces.id) } catch (e) { again = e.statusCode }
let refused
try { await api.intelligence.suggestions("fnintel", { limit: 0 }) } catch (e) { refused = { code: e.code, field: e.details[0].field } }
let missing
try { await api.intelligence.acceptSuggestion("00000000-0000-0000-0000-000000000000") } catch (e) { missing = e.statusCode }
return {
  accepted: { status: accepted.suggestion.status, names: accepted.structure.properties.map((p) => p.name) },
  rejected: rejected.status,
  insight: { recordId: acknowledged.recordId, status: acknowledged.status, open: open.total },
  corrected: { recordId: corrected.recordId, status: corrected.status, value: corrected.suggestedValue },
  dismissed: dismissed.status,
  again,
  refused,
  missing
}`)
    )
    expect(resolved.status, JSON.stringify(resolved)).toBe("completed")
    expect(resolved.result).toEqual({
      accepted: { status: "accepted", names: ["email", "kwh", "country", "score"] },
      rejected: "rejected",
      insight: { recordId: ids[17], status: "acknowledged", open: 1 },
      corrected: { recordId: ids[23], status: "accepted", value: "France" },
      dismissed: "dismissed",
      again: 409,
      refused: { code: "VALIDATION_ERROR", field: "limit" },
      missing: 404
    })
    // each took effect as over HTTP: the structure's new property, the record's update made by the function
    const s = await call("GET", `/structures/${created.id}`)
    expect(s.body.properties.map((p: any) => p.name)).toContain("score")
    const record = await call("GET", `/records/${ids[23]}`)
    expect(record.body.data.country).toBe("France")
    const rejected = await call("GET", "/collections/fnintel/schema-suggestions?status=rejected")
    expect(rejected.body.data.map((x: any) => `${x.kind}:${x.property.name}`)).toEqual(["add_format:email"])

    // a principal with read:structures alone lists, and cannot start a scan
    const reader = await createAccount(server, token, {
      name: "intel-reader",
      permissions: ["read:functions", "execute:functions", "read:structures"]
    })
    const asReader = await computeClient(server, reader.token).runCode(
      fn(`const listed = await api.intelligence.suggestions("fnintel")
try { await api.intelligence.scan("fnintel"); return { listed: listed.total, scanned: true } }
catch (e) { return { listed: listed.total, code: e.code, statusCode: e.statusCode } }`)
    )
    expect(asReader.status, JSON.stringify(asReader)).toBe("completed")
    expect(asReader.result.listed).toBeGreaterThan(1)
    expect(asReader.result).toMatchObject({ code: "PERMISSION_DENIED", statusCode: 403 })
  }, 180_000)
})

describe("bad input", () => {
  it("answers out-of-range settings, unknown ids and a deleted structure with 4xx and the contract body", async () => {
    const s = await structure("scratch", [{ name: "x", type: "number" }], "auto-evolving")
    expectBadRequest(await call("PUT", "/collections/scratch/schema-discovery", { config: { batchSize: 0 } }), "config.batchSize")
    expectBadRequest(
      await call("PUT", "/collections/scratch/schema-discovery", { config: { maxNestingDepth: 100 } }),
      "config.maxNestingDepth"
    )
    const ok = await call("PUT", "/collections/scratch/schema-discovery", { mode: "schemaless", config: { batchSize: 25 } })
    expect(ok.body).toMatchObject({ mode: "schemaless", config: { batchSize: 25, maxNestingDepth: 3 } })
    // on every {id} route: a malformed id is a 400 naming `id`, an unknown one a 404 (docs/errors.md)
    const unknownId = "00000000-0000-4000-8000-000000000000"
    for (const [method, path] of [
      ["GET", "/anomaly-insights/{id}"],
      ["POST", "/anomaly-insights/{id}/acknowledge"],
      ["POST", "/anomaly-insights/{id}/dismiss"],
      ["GET", "/ai-validation/batch/{id}"],
      ["POST", "/ai-validation/suggestions/{id}/accept"],
      ["POST", "/ai-validation/suggestions/{id}/reject"],
      ["POST", "/collections/scratch/schema-suggestions/{id}/accept"],
      ["POST", "/collections/scratch/schema-suggestions/{id}/reject"],
      ["GET", "/intelligence-jobs/{id}"]
    ] as const) {
      const malformed = await call(method, path.replace("{id}", "not-a-uuid"))
      expect(malformed.status, `${method} ${path} malformed`).toBe(400)
      expect(malformed.body).toMatchObject({ code: "BAD_REQUEST", statusCode: 400, details: [{ field: "id", property: "id" }] })
      expect((await call(method, path.replace("{id}", unknownId))).status, `${method} ${path} unknown`).toBe(404)
    }
    expect((await call("GET", "/ai-validation/batch/00000000-0000-0000-0000-000000000000")).status).toBe(404)
    expect((await call("GET", "/anomaly-insights?status=whatever")).status).toBe(400)
    expect((await call("DELETE", `/structures/${s.id}`)).status).toBe(200)
    const gone = await call("POST", "/collections/scratch/schema-discovery/scan")
    expect(gone.status).toBe(404)
    expect(gone.body).toMatchObject({ statusCode: 404, error: "Not Found" })
  }, 60_000)
})

describe("troupe health", () => {
  it("scans a structure and lists what was found, with why", async () => {
    const session = {
      url: server.baseUrl,
      workspace: server.workspace,
      token,
      config: Path.join(Os.tmpdir(), `troupe-health-${process.pid}.json`)
    }
    const run = await runTroupe(session, ["health", "customers", "--json"])
    expect(run.code, run.stderr).toBe(0)
    const report = JSON.parse(run.stdout)
    expect(report.jobs.map((j: any) => `${j.kind}:${j.status}`)).toEqual([
      "discovery_scan:completed",
      "anomaly_analysis:completed",
      "validation_scan:completed"
    ])
    expect(report.corrections.map((c: any) => c.currentValue)).toEqual(["Itally"])
  }, 120_000)
})
