// Realistic valid inputs for the operations whose Schemas say less than their rules do (a structure's properties,
// a query, a function's code): filled with fixture ids, so a valid request reaches the handler's success path as
// often as its refusals. Operations without a template get bodies and queries derived from their Schemas alone.
import { functionCode, type Fixtures } from "./FuzzFixtures.ts"
import type { IdKind, Rng } from "./FuzzContract.ts"

export interface TemplateContext {
  readonly rng: Rng
  readonly fixtures: Fixtures
  /** a realistic id of what the request acts on (the owner's writes: spare resources only, never a stable fixture) */
  readonly id: (kind: IdKind) => string
  /** a realistic id of what the request only refers to (a record's structure, a trigger's function): any resource */
  readonly ref: (kind: IdKind) => string
  /** unique per request */
  readonly unique: string
}

const roles = ["viewer", "developer", "admin", "owner"]
const policyActions = ["create", "retrieve", "list", "update", "delete", "manage", "validate", "execute"]
const policyResources = [
  "records",
  "structures",
  "compute-functions",
  "function-triggers",
  "webhooks",
  "service-accounts",
  "storage",
  "secrets",
  "*"
]

const recordData = (rng: Rng) => ({
  title: `t-${rng.int(1000)}`,
  n: rng.pick([0, 1, -5, 3.25, 1e6, rng.int(1000)]),
  flag: rng.chance(0.5),
  at: rng.pick(["2024-01-01T00:00:00Z", "2030-12-31T23:59:59.999Z", "2000-02-29T12:00:00+02:00"]),
  tags: rng.chance(0.5) ? [] : ["a", "b"]
})

const properties = [
  { name: "title", type: "string", required: true },
  { name: "n", type: "number" },
  { name: "ref", type: "reference" },
  { name: "meta", type: "object" }
]

/** Valid bodies by operation id. */
export const bodyTemplates: Record<string, (c: TemplateContext) => unknown> = {
  "oidc.token": ({ rng, fixtures }) => {
    if (rng.chance(0.5)) {
      const client = rng.pick(fixtures.clients)
      return { grant_type: "client_credentials", client_id: client.clientId, client_secret: client.clientSecret }
    }
    return {
      grant_type: "password",
      username: fixtures.sacrificial.username,
      password: fixtures.sacrificial.password,
      scope: `openid workspace:${fixtures.workspace}`
    }
  },
  "workspaces.create": ({ unique }) => ({ slug: `fz-${unique}`, name: `Fuzz ${unique}` }),
  "members.add": ({ rng, unique }) => ({
    username: `fz${unique}`,
    password: `pw-${unique}-long-enough`,
    role: rng.pick(["viewer", "developer"])
  }),
  "members.setRole": ({ rng }) => ({ role: rng.pick(roles) }),
  // never the caller's real password: the owner's token must outlive the run (the careful phase changes one for real)
  "members.changePassword": ({ unique }) => ({
    currentPassword: "certainly-not-the-password",
    newPassword: `new-${unique}-long-enough`
  }),
  "serviceAccounts.create": ({ rng, unique }) => ({
    name: `fz-sa-${unique}`,
    description: "fuzz",
    ...(rng.chance(0.5) ? { role: rng.pick(["viewer", "developer", "admin"]) } : { permissions: ["read:records", "write:records"] })
  }),
  "serviceAccounts.setName": ({ unique }) => ({ name: `fz-sa-renamed-${unique}` }),
  "serviceAccounts.setDescription": ({ rng }) => ({ description: rng.chance(0.5) ? "described" : null }),
  "groups.create": ({ unique }) => ({ name: `fz-group-${unique}`, description: "fuzz" }),
  "groups.addPolicy": ({ rng }) => ({
    action: rng.pick(policyActions),
    resource: rng.pick(policyResources),
    effect: rng.pick(["allow", "deny"])
  }),
  "groups.addMember": ({ rng, id }) => (rng.chance(0.5) ? { userId: id("userId") } : { serviceAccountId: Number(id("serviceAccountId")) }),
  "structures.create": ({ rng, unique }) => ({
    name: `Fuzz ${unique}`,
    recordSlug: `fz-${unique}`,
    properties: [
      { name: "title", type: "string" },
      { name: "n", type: "number", indexed: rng.chance(0.3) },
      { name: "flag", type: "boolean" },
      { name: "at", type: "datetime" },
      { name: "tags", type: "array", items: { type: "string" } }
    ],
    enableVersioning: rng.chance(0.5)
  }),
  "structures.validate": ({ unique }) => ({ name: `Check ${unique}`, properties }),
  "structures.update": ({ rng, unique }) =>
    rng.chance(0.5) ? { description: `d-${unique}` } : { name: `Renamed ${unique}`, enableVersioning: true },
  "structures.patch": ({ unique }) => ({ description: `p-${unique}` }),
  "structures.deleteProperties": ({ rng }) => ({ ids: rng.chance(0.5) ? [] : ["missing-property"] }),
  "structures.setMetadata": ({ rng }) => ({ recordWritesLocked: rng.chance(0.3), migrationInProgress: false }),
  "structures.createCollection": ({ unique }) => ({
    name: `Coll ${unique}`,
    recordSlug: `fzc-${unique}`,
    fields: { title: { type: "string", required: true }, n: { type: "number" } }
  }),
  "structures.updateCollection": ({ unique }) => ({ description: `c-${unique}`, fields: { extra: { type: "boolean" } } }),
  "records.create": ({ rng, ref }) => ({ structureId: ref("structureId"), data: recordData(rng) }),
  "records.bulkCreate": ({ rng, ref }) => ({
    structureId: ref("structureId"),
    records: Array.from({ length: 1 + rng.int(5) }, () => ({ data: recordData(rng) })),
    options: { atomic: rng.chance(0.5) }
  }),
  "records.bulkUpdate": ({ rng, id }) => ({
    updates: [{ id: id("recordId"), data: { n: rng.int(100) } }],
    options: { atomic: rng.chance(0.5) }
  }),
  "records.bulkDelete": ({ rng, id }) => ({ ids: [id("recordId")], permanent: rng.chance(0.3) }),
  "records.upsert": ({ rng }) => ({ match: { title: `u-${rng.int(20)}` }, data: { ...recordData(rng), title: `u-${rng.int(20)}` } }),
  "records.update": ({ rng }) => ({ data: { n: rng.int(1000) }, reason: "fuzz" }),
  "records.replace": ({ rng }) => ({ data: recordData(rng) }),
  "records.restore": ({ rng }) => ({ version: rng.pick([1, 2]) }),
  "records.revert": () => ({ reason: "fuzz" }),
  "records.createA": ({ rng }) => recordData(rng),
  "records.bulkCreateA": ({ rng }) => ({ records: [recordData(rng), recordData(rng)] }),
  "records.bulkUpdateA": ({ rng }) => ({ query: rng.pick(["n > 100000", "title = 'none'"]), updates: { flag: true } }),
  "records.bulkDeleteA": ({ rng }) => ({ query: rng.pick(["n = 424242", "title = 'none'"]) }),
  "records.updateA": ({ rng }) => ({ n: rng.int(1000) }),
  "records.replaceA": ({ rng }) => recordData(rng),
  "query.query": ({ rng, fixtures }) =>
    rng.pick([
      { query: `SELECT * FROM ${fixtures.structure.slug} WHERE n >= :min ORDER BY n DESC LIMIT 5`, parameters: { min: 1 } },
      { query: `SELECT title, COUNT(*) AS c FROM ${fixtures.structure.slug} GROUP BY title` },
      { query: `SELECT * FROM ${fixtures.structure.slug} WHERE title IN (:t) AND flag = true`, parameters: { t: ["stable 1", "x"] } }
    ]),
  "query.aggregate": ({ rng }) =>
    rng.pick([
      { operations: { total: { count: "*" } } },
      { groupBy: "flag", operations: { s: { sum: "n" }, m: { max: "n" } }, filter: { "data.n": { gte: 1 } } }
    ]),
  "webhooks.create": ({ rng, fixtures, unique }) => ({
    name: `fz-hook-${unique}`,
    url: rng.chance(0.5) ? fixtures.receiver.url : "http://127.0.0.1:9/unreachable",
    events: rng.pick([["record.created"], ["record.*"], ["*"], ["function.completed"]])
  }),
  "webhooks.update": ({ rng, unique }) => (rng.chance(0.5) ? { enabled: true } : { name: `fz-hook-renamed-${unique}`, filters: null }),
  "webhooks.test": ({ rng }) => (rng.chance(0.5) ? { event: "record.created", data: { fuzz: true } } : null),
  "computeFunctions.create": ({ unique }) => ({ name: `fz-fn-${unique}`, code: functionCode, description: "fuzz" }),
  "computeFunctions.update": ({ unique }) => ({ description: `u-${unique}` }),
  "computeFunctions.test": ({ rng }) => ({ code: functionCode, params: { n: rng.int(10) } }),
  "functions.create": ({ unique }) => ({ name: `fz-sfn-${unique}`, code: functionCode }),
  "functions.update": ({ unique }) => ({ description: `su-${unique}` }),
  "functions.execute": ({ rng }) => (rng.chance(0.5) ? { n: rng.int(10) } : null),
  "drafts.create": ({ rng, ref, unique }) =>
    rng.chance(0.5)
      ? { resourceType: "compute-functions", data: { name: `fz-draft-${unique}`, code: functionCode } }
      : {
          resourceType: "function-triggers",
          data: { name: `fz-draft-t-${unique}`, functionId: ref("functionId"), executionType: "on-demand" }
        },
  "drafts.update": ({ unique }) => ({ data: { name: `fz-draft-u-${unique}`, code: functionCode } }),
  "functionTriggers.create": ({ rng, ref, unique }) => ({
    name: `fz-trigger-${unique}`,
    functionId: ref("functionId"),
    executionType: "on-demand",
    ...(rng.chance(0.3) ? { triggerMetadata: { params: { k: 1, secret: { value: "s3cret", encrypt: true } } } } : {})
  }),
  "functionTriggers.update": ({ unique }) => ({ description: `tu-${unique}` }),
  "functionTriggers.execute": ({ rng }) => (rng.chance(0.5) ? { n: rng.int(10) } : null),
  "functionRuns.rerun": ({ rng }) => (rng.chance(0.5) ? { reason: "fuzz", overrideParams: { again: true } } : null)
}

/** Valid query parameters by operation id (merged over the Schema-derived ones). */
export const queryTemplates: Record<string, (c: TemplateContext) => Record<string, string>> = {
  "records.list": ({ rng, ref }) => ({
    structureId: ref("structureId"),
    limit: String(1 + rng.int(50)),
    ...(rng.chance(0.3) ? { includeCount: "true" } : {})
  }),
  "records.listBySlug": ({ rng }) => ({ page: "1", pageSize: String(1 + rng.int(20)) }),
  "records.listA": ({ rng }) => ({ limit: String(1 + rng.int(20)), sort: rng.pick(["n", "-n", "createdAt"]) }),
  "functionRuns.list": ({ rng, ref }) => (rng.chance(0.5) ? { jobId: ref("runId") } : { functionId: ref("functionId"), limit: "10" }),
  "structures.list": () => ({ limit: "10" }),
  "webhooks.deliveries": () => ({ limit: "10" })
}
