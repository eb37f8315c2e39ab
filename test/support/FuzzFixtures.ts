// What the fuzzer's requests point at: a workspace full of real resources (structures, records, a webhook with
// deliveries, functions, triggers, drafts, runs, service accounts, groups with policies, members), a second workspace
// whose owner plays the foreign token, throw-away workspaces for the destructive workspace routes, and the pools of
// ids the requests draw from. Stable fixtures are never the target of the owner's writes (the snapshot reads them);
// spare ones are, and so is everything the owner's own requests create.
import fc from "fast-check"
import * as Jose from "jose"
import type { IdKind, Rng } from "./FuzzContract.ts"
import { createUser } from "./IdentityHelpers.ts"
import type { Response, TestServer } from "./TestServer.ts"
import { type Receiver, startReceiver } from "./WebhookReceiver.ts"
import { sleep } from "./wait.ts"

export const principals = ["owner", "viewer", "foreign", "anonymous"] as const
export type PrincipalName = (typeof principals)[number]

/** Ids the requests draw from: stable (read by the snapshot) and spare (the owner's writes go there). */
export class Pools {
  readonly stable = new Map<IdKind, Array<string>>()
  readonly spare = new Map<IdKind, Array<string>>()
  /** ids no request may delete or demote whatever they draw (the workspaces under test, the principals' users) */
  readonly protected = new Set<string>()

  add(kind: IdKind, id: unknown, stable = false) {
    if (id === undefined || id === null) return
    const value = String(id)
    const map = stable ? this.stable : this.spare
    const list = map.get(kind) ?? []
    if (!list.includes(value)) list.push(value)
    if (list.length > 300) list.splice(0, list.length - 300)
    map.set(kind, list)
  }

  remove(kind: IdKind, id: string) {
    const list = this.spare.get(kind)
    const at = list?.indexOf(id) ?? -1
    if (at >= 0) list!.splice(at, 1)
  }

  /** A plausible id that names nothing. */
  random(kind: IdKind, rng: Rng): string {
    switch (kind) {
      case "serviceAccountId":
        return String(rng.pick([1, 2, 999_999, 2_147_483_647, rng.int(100_000) + 1]))
      case "version":
        return String(rng.pick([0, 1, 2, 3, 99, 2_147_483_647]))
      case "workspaceSlug":
      case "structureSlug":
        return `nope-${rng.int(1_000_000)}`
      case "free":
        return rng.fc(fc.string({ minLength: 1, maxLength: 64, unit: "grapheme-ascii" }))
      default:
        return rng.chance(0.8) ? rng.fc(fc.uuid({ version: 4 })) : rng.pick(["nope", "1", "0", "abc-def"])
    }
  }

  /**
   * A realistic id for a request: reads see stable and spare ids, the owner's writes spare ones only (so the stable
   * fixtures stay what the snapshot read), a tenth of all draws names nothing.
   */
  pick(kind: IdKind, rng: Rng, ownerWrite: boolean): string {
    const stable = this.stable.get(kind) ?? []
    const spare = this.spare.get(kind) ?? []
    if (rng.chance(0.1)) return this.random(kind, rng)
    const from = ownerWrite ? spare : rng.chance(0.6) && stable.length > 0 ? stable : spare.length > 0 ? spare : stable
    const id = from.length > 0 ? rng.pick(from) : this.random(kind, rng)
    return ownerWrite && this.protected.has(id) ? this.random(kind, rng) : id
  }
}

export interface Fixtures {
  readonly workspace: string
  readonly foreignWorkspace: string
  readonly base: string
  readonly tokens: Readonly<Record<Exclude<PrincipalName, "anonymous">, string>>
  readonly pools: Pools
  readonly receiver: Receiver
  /** a service account whose credentials valid token requests use */
  readonly clients: ReadonlyArray<{ readonly clientId: string; readonly clientSecret: string }>
  /** a user whose password valid token requests use (and the careful phase changes) */
  readonly sacrificial: { readonly username: string; readonly password: string; readonly token: string }
  /** owner GETs whose answers the unprivileged phase must leave unchanged */
  readonly snapshotPaths: ReadonlyArray<string>
  /** the stable structure's slug and id (templates fill records with its fields) */
  readonly structure: { readonly id: string; readonly slug: string }
  readonly close: () => Promise<void>
}

const fields = [
  { name: "title", type: "string" },
  { name: "n", type: "number", indexed: true },
  { name: "flag", type: "boolean" },
  { name: "at", type: "datetime" },
  { name: "tags", type: "array", items: { type: "string" } }
]

export const functionCode = "async function run() {\n  return { success: true, data: { params: executionParams } }\n}"

/** Creates every fixture of a run (as the owner) and fills the pools. */
export const setupFixtures = async (server: TestServer, log: (line: string) => void = () => {}): Promise<Fixtures> => {
  const owner = await server.adminToken()
  const base = server.base
  const pools = new Pools()
  const call = async (method: string, path: string, body?: unknown): Promise<Response> =>
    server.request(method, path, { token: owner, ...(body !== undefined ? { body } : {}) })
  const must = async (method: string, path: string, body?: unknown, statuses: ReadonlyArray<number> = [200, 201]) => {
    const res = await call(method, path, body)
    if (!statuses.includes(res.status)) {
      throw new Error(`fixture ${method} ${path}: ${res.status} ${res.text.slice(0, 500)}`)
    }
    return res.body
  }
  const receiver = await startReceiver()

  // workspaces: the foreign one (its owner is the foreign principal) and throw-away ones for the workspace routes
  const foreignWorkspace = "fuzz-foreign"
  await must("POST", "/workspace/api/v1/workspaces", { slug: foreignWorkspace, name: "Fuzz foreign" })
  const foreignAdmin = await server.userToken("admin", server.adminPassword, foreignWorkspace)
  const foreign = await createUser(server, foreignAdmin, "owner", foreignWorkspace)
  for (let i = 1; i <= 3; i++) {
    const slug = `fuzz-throwaway-${i}`
    await must("POST", "/workspace/api/v1/workspaces", { slug, name: `Throw-away ${i}` })
    pools.add("workspaceSlug", slug)
  }
  pools.protected.add(server.workspace).add(foreignWorkspace)

  // members: the viewer principal, and spare users the owner's member and group requests may change
  const viewer = await createUser(server, owner, "viewer")
  const me = await must("GET", `${base}/me`)
  pools.protected.add(String(me.id)).add(viewer.userId)
  pools.add("userId", viewer.userId, true)
  const sacrificial = await createUser(server, owner, "developer")
  for (let i = 0; i < 3; i++) {
    const spare = { username: `fuzz-spare-${i}`, password: `pw-spare-${i}-long-enough`, role: "developer" }
    const member = await must("POST", `${base}/members`, spare, [201])
    pools.add("userId", member.userId)
  }
  log(`fixtures: workspaces and members ready`)

  // structures with versions, a webhook (deliveries to a local receiver), records
  const structure = await must("POST", `${base}/structures`, {
    name: "Fuzz stable",
    recordSlug: "fuzz-stable",
    properties: fields,
    enableVersioning: true
  })
  await must("PATCH", `${base}/structures/${structure.id}`, { description: "stable fixture, version 2" })
  pools.add("structureId", structure.id, true)
  pools.add("structureSlug", structure.recordSlug, true)
  pools.add("version", 1, true)
  pools.add("version", 2, true)
  const spares: Array<{ id: string; recordSlug: string }> = []
  for (let i = 1; i <= 2; i++) {
    const spare = await must("POST", `${base}/structures`, {
      name: `Fuzz spare ${i}`,
      recordSlug: `fuzz-spare-${i}`,
      properties: fields,
      enableVersioning: true
    })
    spares.push(spare)
    pools.add("structureId", spare.id)
    pools.add("structureSlug", spare.recordSlug)
  }
  const events = ["record.created", "record.updated"]
  const hook = await must("POST", `${base}/webhooks`, { name: "fuzz-hook", url: receiver.url, events }, [201])
  pools.add("webhookId", hook.id, true)
  const spareHook = await must(
    "POST",
    `${base}/webhooks`,
    {
      name: "fuzz-spare-hook",
      url: receiver.url,
      events: ["record.*"]
    },
    [201]
  )
  pools.add("webhookId", spareHook.id)
  for (let i = 0; i < 5; i++) {
    const record = await must(
      "POST",
      `${base}/records`,
      {
        structureId: structure.id,
        data: { title: `stable ${i}`, n: i, flag: i % 2 === 0, at: "2024-01-01T00:00:00Z", tags: [`t${i}`] }
      },
      [201]
    )
    pools.add("recordId", record.id, true)
  }
  for (let i = 0; i < 8; i++) {
    const record = await must(
      "POST",
      `${base}/records`,
      {
        structureId: spares[i % 2]!.id,
        data: { title: `spare ${i}`, n: 100 + i, flag: true, at: "2024-02-01T00:00:00Z", tags: [] }
      },
      [201]
    )
    pools.add("recordId", record.id)
  }
  log(`fixtures: structures, records and webhooks ready`)

  // compute: functions, triggers, runs (finished), drafts
  const fn = await must("POST", `${base}/compute-functions`, { name: "fuzz-echo", code: functionCode }, [201])
  pools.add("functionId", fn.id, true)
  const onDemand = (name: string, functionId: string) => ({ name, functionId, executionType: "on-demand" })
  const trigger = await must("POST", `${base}/function-triggers`, onDemand("fuzz-now", fn.id), [201])
  pools.add("triggerId", trigger.id, true)
  for (let i = 0; i < 2; i++) {
    const spareFn = await must("POST", `${base}/compute-functions`, { name: `fuzz-spare-fn-${i}`, code: functionCode })
    pools.add("functionId", spareFn.id)
    const spareTrigger = await must("POST", `${base}/function-triggers`, onDemand(`fuzz-spare-trigger-${i}`, spareFn.id))
    pools.add("triggerId", spareTrigger.id)
  }
  const run = await must("POST", `${base}/function-triggers/${trigger.id}/execute`, { fixture: true })
  pools.add("runId", run.jobId, true)
  const spareRun = await must("POST", `${base}/compute-functions/test`, { code: functionCode, params: { spare: true } })
  pools.add("runId", spareRun.jobId)
  const functionDraft = (name: string) => ({ resourceType: "compute-functions", data: { name, code: functionCode } })
  const draft = await must("POST", `${base}/drafts`, functionDraft("fuzz-draft"), [201])
  pools.add("draftId", draft.id, true)
  for (let i = 0; i < 2; i++) {
    const fnDraft = await must("POST", `${base}/drafts`, functionDraft(`fuzz-draft-fn-${i}`), [201])
    pools.add("draftId", fnDraft.id)
    const triggerDraft = await must(
      "POST",
      `${base}/drafts`,
      {
        resourceType: "function-triggers",
        data: { name: `fuzz-draft-trigger-${i}`, functionId: fn.id, executionType: "on-demand" }
      },
      [201]
    )
    pools.add("draftId", triggerDraft.id)
  }
  log(`fixtures: functions, triggers, runs and drafts ready`)

  // service accounts and groups
  const account = await must("POST", `${base}/service-accounts`, { name: "fuzz-sa", role: "viewer" }, [201])
  pools.add("serviceAccountId", account.id, true)
  const clients = [{ clientId: account.clientId as string, clientSecret: account.clientSecret as string }]
  for (let i = 0; i < 2; i++) {
    const spare = await must("POST", `${base}/service-accounts`, { name: `fuzz-spare-sa-${i}`, role: "developer" }, [201])
    pools.add("serviceAccountId", spare.id)
    clients.push({ clientId: spare.clientId, clientSecret: spare.clientSecret })
  }
  const group = await must("POST", `${base}/groups`, { name: "fuzz-group", description: "stable" }, [201])
  pools.add("groupId", group.id, true)
  const policy = await must("POST", `${base}/groups/${group.id}/policies`, { action: "retrieve", resource: "records" })
  pools.add("policyId", policy.id, true)
  await must("POST", `${base}/groups/${group.id}/members`, { userId: pools.spare.get("userId")![0] }, [201])
  for (let i = 0; i < 2; i++) {
    const spare = await must("POST", `${base}/groups`, { name: `fuzz-spare-group-${i}` }, [201])
    pools.add("groupId", spare.id)
    const deny = { action: "list", resource: "webhooks", effect: "deny" }
    const sparePolicy = await must("POST", `${base}/groups/${spare.id}/policies`, deny, [201])
    pools.add("policyId", sparePolicy.id)
  }

  // runs finished and deliveries settled before anything is snapshot
  for (const id of [run.jobId, spareRun.jobId]) {
    const deadline = Date.now() + 30_000
    for (;;) {
      const res = await call("GET", `${base}/function-runs/${id}`)
      if (res.status === 200 && ["completed", "failed", "timed_out"].includes(res.body.status)) break
      if (Date.now() > deadline) throw new Error(`fixture run ${id} did not finish: ${res.text}`)
      await sleep(50)
    }
  }
  for (const [webhook, stable] of [
    [hook.id, true],
    [spareHook.id, false]
  ] as const) {
    const deadline = Date.now() + 30_000
    for (;;) {
      const res = await call("GET", `${base}/webhooks/${webhook}/deliveries?limit=500`)
      const data = (res.body?.data ?? []) as Array<{ id: string; status: string }>
      if (data.length > 0 && data.every((d) => d.status === "delivered")) {
        for (const d of data) pools.add("deliveryId", d.id, stable)
        break
      }
      if (Date.now() > deadline) {
        throw new Error(`fixture deliveries of ${webhook} did not settle: ${res.text.slice(0, 500)}`)
      }
      await sleep(100)
    }
  }
  log(`fixtures: service accounts and groups ready; runs and deliveries settled`)

  const snapshotPaths = [
    "/workspace/api/v1/workspaces?limit=100",
    `${base}/structures?limit=500`,
    `${base}/structures/${structure.id}`,
    `${base}/structures/${structure.id}/versions`,
    `${base}/collections/${structure.id}`,
    `${base}/records?structureId=${structure.id}&limit=100&includeDeleted=true`,
    ...spares.map((s) => `${base}/records?structureId=${s.id}&limit=100&includeDeleted=true`),
    ...(pools.stable.get("recordId") ?? []).map((id) => `${base}/records/${id}`),
    `${base}/webhooks?limit=500`,
    `${base}/webhooks/${hook.id}`,
    `${base}/webhooks/${hook.id}/deliveries?limit=500`,
    `${base}/compute-functions?limit=1000`,
    `${base}/compute-functions/${fn.id}/versions`,
    `${base}/function-triggers?limit=1000`,
    `${base}/function-triggers/${trigger.id}`,
    `${base}/drafts?limit=1000`,
    `${base}/function-runs?limit=1000`,
    `${base}/service-accounts?limit=100`,
    `${base}/groups?limit=100`,
    `${base}/groups/${group.id}`,
    `${base}/members?limit=100`,
    "/oidc/jwks"
  ]

  return {
    workspace: server.workspace,
    foreignWorkspace,
    base,
    tokens: { owner, viewer: viewer.token, foreign: foreign.token },
    pools,
    receiver,
    clients,
    sacrificial: { username: sacrificial.username, password: sacrificial.password, token: sacrificial.token },
    snapshotPaths,
    structure: { id: structure.id, slug: structure.recordSlug },
    close: () => receiver.close()
  }
}

/** The Authorization header of a request by `principal` (anonymous: none, or a token that must not pass). */
export const authorizationFor = (fixtures: Fixtures, principal: PrincipalName, rng: Rng): string | undefined => {
  if (principal !== "anonymous") return `Bearer ${fixtures.tokens[principal]}`
  const owner = fixtures.tokens.owner
  switch (rng.int(10)) {
    case 0:
      return `Bearer ${owner.slice(0, -2)}${owner.endsWith("AA") ? "BB" : "AA"}` // signature tampered
    case 1: {
      const claims = Jose.decodeJwt(owner)
      const header = Buffer.from(JSON.stringify({ alg: "none", typ: "JWT" })).toString("base64url")
      return `Bearer ${header}.${Buffer.from(JSON.stringify(claims)).toString("base64url")}.`
    }
    case 2:
      return `Bearer ${rng.pick(["garbage", "a.b.c", "", "null", "x".repeat(4000)])}`
    case 3:
      return rng.pick(["Basic YWRtaW46YWRtaW4=", "Token abc", "bearer", "Bearer  ", "Digest x"])
    default:
      return undefined
  }
}

/** Owner GETs of the stable fixtures (each must answer 200), for the before/after comparison of the unprivileged phase. */
export const snapshot = async (server: TestServer, fixtures: Fixtures): Promise<Map<string, string>> => {
  const out = new Map<string, string>()
  for (const path of fixtures.snapshotPaths) {
    const res = await server.request("GET", path, { token: fixtures.tokens.owner })
    if (res.status !== 200) throw new Error(`snapshot GET ${path}: ${res.status} ${res.text.slice(0, 500)}`)
    out.set(path, res.text)
  }
  return out
}

/** The snapshot paths whose answers differ. */
export const snapshotDiff = (before: Map<string, string>, after: Map<string, string>) =>
  [...before.keys()]
    .filter((path) => before.get(path) !== after.get(path))
    .map((path) => ({
      path,
      before: before.get(path)!.slice(0, 2000),
      after: (after.get(path) ?? "").slice(0, 2000)
    }))
