// The fuzzer's run: a schedule of requests over every operation (each operation crossed with every request class and
// principal first, then at random), built from the operation's Schemas and the fixtures, sent over raw HTTP (bodies on
// any method, any header, truncated bodies through a bare socket), and checked against the contract:
//   - never a 5xx, never a request left unanswered;
//   - every 4xx carries the error body {error, message, code, statusCode, details, requestId} (requestId = x-request-id);
//   - a viewer, a token of another workspace or no token never changes anything: their writes answer 4xx only (the
//     statuses of a refusal), and in the unprivileged phase the owner's GETs of every fixture read the same before
//     and after; they never read what they may not (foreign and anonymous: no 2xx on a guarded route at all);
//   - the server stays up (/health and /ready 200 at the end), after the careful phase has run the operations that
//     would wreck a run (deleting a workspace, rotating the signing key, changing a password) once each, as they
//     are meant to be used.
// Types in FuzzTypes.ts, raw protocol garbage in FuzzWire.ts, the printed report in FuzzReport.ts.
import { rolePermissions } from "@troupe/api/identity/Roles"
import * as Crypto from "node:crypto"
import * as Http from "node:http"
import {
  fieldKinds,
  garbageBody,
  garbageContentTypes,
  hostileString,
  type IdKind,
  isWrite,
  mutateJson,
  type MutationKind,
  mutationKinds,
  type Operation,
  operations,
  paramKind,
  prototypeKeys,
  Raw,
  rngFor,
  SchemaSamples,
  toJsonText
} from "./FuzzContract.ts"
import { authorizationFor, type Fixtures, type PrincipalName, principals, setupFixtures, snapshot, snapshotDiff } from "./FuzzFixtures.ts"
import { bodyTemplates, queryTemplates, type TemplateContext } from "./FuzzTemplates.ts"
import type { TestServer } from "./TestServer.ts"
import {
  classes,
  type Failure,
  type FuzzOptions,
  type FuzzReport,
  type FuzzRequest,
  type OperationStats,
  type Outcome,
  type RequestClass,
  type Slot
} from "./FuzzTypes.ts"
import { formatFailure } from "./FuzzReport.ts"
import { protocolGarbage, sendRaw } from "./FuzzWire.ts"

// ------------------------------------------------------------------------------------------------ schedule

const combos = classes.flatMap((cls) => principals.map((principal) => ({ cls, principal })))

/**
 * The first `ops × 12` requests cross every operation with every class and principal (a seeded order); the rest pick
 * the operation in turn and class and principal at random (the owner most often: the success paths are his).
 */
const schedule = (ops: ReadonlyArray<Operation>, requests: number, seed: string) => {
  const rng = rngFor(seed, -1)
  const order = [...ops]
  for (let i = order.length - 1; i > 0; i--) {
    const j = rng.int(i + 1)
    ;[order[i], order[j]] = [order[j]!, order[i]!]
  }
  const sweep = order.length * combos.length
  const slots: Array<Slot> = []
  for (let index = 0; index < requests; index++) {
    const at = index % order.length
    const op = order[at]!
    if (index < sweep) {
      const round = Math.floor(index / order.length)
      const { cls, principal } = combos[(round + at) % combos.length]!
      slots.push({ index, op, cls, principal })
    } else {
      const r = rngFor(seed, index)
      const p = r.next()
      const principal: PrincipalName = p < 0.5 ? "owner" : p < 0.67 ? "viewer" : p < 0.84 ? "foreign" : "anonymous"
      const c = r.next()
      slots.push({ index, op, cls: c < 0.45 ? "valid" : c < 0.85 ? "mutated" : "garbage", principal })
    }
  }
  // unprivileged requests of the sweep run first, alone, between two snapshots
  const unprivileged = slots.filter((s) => s.index < sweep && s.principal !== "owner")
  const rest = slots.filter((s) => !(s.index < sweep && s.principal !== "owner"))
  return { unprivileged, rest }
}

// ------------------------------------------------------------------------------------------------ encoding

/** Percent-encodes any string, lone surrogates included (as their WTF-8 bytes, as a careless client would). */
export const encodeComponent = (s: string): string => {
  let out = ""
  for (const ch of s) {
    const code = ch.charCodeAt(0)
    if (ch.length === 1 && code >= 0xd800 && code <= 0xdfff) {
      const bytes = [0xe0 | (code >> 12), 0x80 | ((code >> 6) & 0x3f), 0x80 | (code & 0x3f)]
      out += bytes.map((b) => `%${b.toString(16).toUpperCase()}`).join("")
    } else out += encodeURIComponent(ch)
  }
  return out
}

const rawSegments = ["%", "%zz", "..", ".", "%2e%2e", "%2F", "%00", "%ED%A0%80", "%C0%80", "a%20b", "~", "%u0000", ";", "*", "%25", "+"]
const oddQueryKeys = [
  "page",
  "limit",
  "offset",
  "pageSize",
  "sort",
  "filter",
  "cursor",
  "structureId",
  "filter[__proto__]",
  "data.n[gte]",
  "sort[field]",
  "includeCount",
  "fields",
  "expand",
  "jobId",
  ...prototypeKeys
]
const oddQueryValues = ["-1", "0", "1e309", "9007199254740993", "NaN", "1.5", "", "true", "[]", "{}", "null", "%", "1,2,3"]
const json = "application/json"
const form = "application/x-www-form-urlencoded"

const queryText = (pairs: ReadonlyArray<readonly [string, string]>) =>
  pairs.map(([k, v]) => `${encodeComponent(k)}=${encodeComponent(v)}`).join("&")

/** Keeps a URL piece well under the server's header limit (over-long URLs are protocol garbage). */
const clip = (s: string) => (s.length > 3000 ? s.slice(0, 3000) : s)

// ------------------------------------------------------------------------------------------------ the run

export const runFuzz = async (server: TestServer, options: FuzzOptions): Promise<FuzzReport> => {
  const log = options.log ?? (() => {})
  const maxHuge = options.maxHuge ?? 256 * 1024
  const timeoutMs = options.timeoutMs ?? 60_000
  const started = performance.now()
  const allOps = operations()
  const ops = options.only && options.only.length > 0 ? allOps.filter((o) => options.only!.includes(o.id)) : allOps
  if (ops.length === 0) {
    throw new Error(`FUZZ_ONLY matches no operation; operations: ${allOps.map((o) => o.id).join(", ")}`)
  }
  log(`fuzz: seed ${options.seed}, ${options.requests} requests over ${ops.length} operations, ` + `concurrency ${options.concurrency}`)

  const fixtures = await setupFixtures(server, log)
  const samples = new SchemaSamples(options.seed)
  const runTag = Crypto.createHash("sha256").update(options.seed).digest("hex").slice(0, 4)
  const viewerPermissions = new Set<string>(rolePermissions.viewer)
  const agent = new Http.Agent({ keepAlive: true, maxSockets: options.concurrency })
  const base = new URL(server.baseUrl)

  const perOperation = new Map<string, OperationStats>()
  const statuses: Record<string, number> = {}
  const byClass = { valid: 0, mutated: 0, garbage: 0 } as Record<RequestClass, number>
  const byPrincipal = { owner: 0, viewer: 0, foreign: 0, anonymous: 0 } as Record<PrincipalName, number>
  const mutations: Record<string, number> = {}
  const garbage: Record<string, number> = {}
  const failures: Array<Failure> = []
  let failureCount = 0
  let sent = 0
  let rotations = 0
  const judgedBeforeRefused: Record<string, Record<string, number>> = {}

  const statsOf = (op: string) => {
    let stats = perOperation.get(op)
    if (stats === undefined) {
      const row = () => ({ owner: 0, viewer: 0, foreign: 0, anonymous: 0 })
      stats = { classes: { valid: row(), mutated: row(), garbage: row() }, statuses: {} }
      perOperation.set(op, stats)
    }
    return stats
  }
  const fail = (failure: Failure) => {
    failureCount++
    if (failures.length < 50) failures.push(failure)
    if (failureCount <= 5) log(formatFailure(failure))
  }

  // ---------------------------------------------------------------------------------------------- building

  const build = (slot: Slot): FuzzRequest => {
    const { op, index } = slot
    const rng = rngFor(options.seed, index)
    const cls = slot.cls
    let principal = slot.principal
    // rotating the signing key: a few real rotations, then the viewer asks (the careful phase rotates once more)
    if (op.id === "workspaces.rotateSigningKey" && principal === "owner" && rotations++ >= 3) principal = "viewer"
    const ownerWrite = principal === "owner" && isWrite(op)
    const unique = `${runTag}${index.toString(36)}`
    const id = (kind: IdKind) => fixtures.pools.pick(kind, rng, ownerWrite)
    const ref = (kind: IdKind) => fixtures.pools.pick(kind, rng, false)
    const context: TemplateContext = { rng, fixtures, id, ref, unique }
    const variant: Array<string> = []
    const headers: Record<string, string> = {}
    const auth = authorizationFor(fixtures, principal, rng)
    if (auth !== undefined) headers.authorization = auth

    // path
    let method = op.method
    const path = op.path.replace(/:(\w+)/g, (_, name: string) => {
      const kind = paramKind(op, name)
      let value = kind === "workspace" ? fixtures.workspace : id(kind)
      if (cls === "mutated" && rng.chance(0.35)) {
        if (rng.chance(0.3)) {
          variant.push(`path.${name}:raw`)
          return rng.pick(rawSegments)
        }
        // (the foreign principal is never sent to its own workspace: there it may do anything)
        const others = principal === "foreign" ? ["nope", "DEFAULT"] : [fixtures.foreignWorkspace, "nope", "DEFAULT"]
        value = clip(kind === "workspace" && rng.chance(0.3) ? rng.pick(others) : hostileString(rng, 4096))
        variant.push(`path.${name}:hostile`)
      }
      if (kind === "workspaceSlug" && ownerWrite && fixtures.pools.protected.has(value)) {
        value = fixtures.pools.random(kind, rng)
      }
      return value.length === 0 ? "%20" : encodeComponent(value)
    })

    // query
    let pairs: Array<[string, string]> = []
    if (op.query !== undefined && cls !== "garbage") {
      const sample = rng.pick(samples.of(op.query, `${op.id}:query`)) as Record<string, unknown> | undefined
      for (const [k, v] of Object.entries(sample ?? {})) {
        if (v === undefined) continue
        const kind = fieldKinds[k]
        pairs.push([k, kind !== undefined && rng.chance(0.7) ? ref(kind) : String(v)])
      }
      const template = queryTemplates[op.id]
      if (template !== undefined && rng.chance(0.6)) {
        const extra = template(context)
        pairs = [...pairs.filter(([k]) => !(k in extra)), ...Object.entries(extra)]
      }
    }
    if (cls === "mutated" && rng.chance(0.35)) {
      variant.push("query")
      const n = 1 + rng.int(3)
      for (let i = 0; i < n; i++) {
        const key = rng.chance(0.5) && pairs.length > 0 ? rng.pick(pairs)[0] : rng.pick(oddQueryKeys)
        pairs.push([key, clip(rng.chance(0.5) ? rng.pick([...oddQueryValues, "x".repeat(2000)]) : hostileString(rng, 2048))])
      }
    }
    if (cls === "mutated" && rng.chance(0.04)) {
      variant.push("query:many")
      const known = pairs.map(([k]) => k)
      for (let i = 0; i < 300; i++) {
        pairs.push([known.length > 0 && rng.chance(0.5) ? rng.pick(known) : `p${i}`, String(i)])
      }
    }
    let target = pairs.length > 0 ? `${path}?${queryText(pairs)}` : path
    if (cls === "mutated" && rng.chance(0.05)) {
      target += rng.pick(["?%", "?%zz=1", "?a=%ED%A0%80", "?&&&", "?=", "#frag", "?a=1&a=2&a=3"])
      variant.push("query:raw")
    }
    // the same routes under their alias bases (the edge rewrites them), and odd shapes of the path itself
    if (cls !== "garbage" && op.path.startsWith("/workspace/:workspace/") && rng.chance(0.1)) {
      target =
        op.group === "serviceAccounts" && rng.chance(0.5)
          ? target.replace(/^(\/workspace\/[^/]+\/api\/v1)\//, "$1/iam/")
          : `${rng.pick(["/data", "/iam"])}${target}`
      variant.push("alias")
    }
    if (cls === "mutated" && rng.chance(0.1)) {
      const [p, q] = [target.split("?")[0]!, target.includes("?") ? target.slice(target.indexOf("?")) : ""]
      const shapes: Array<[string, () => string]> = [
        ["trailingSlash", () => `${p}/`],
        ["doubleSlash", () => p.replace(/\/api\/v1\//, "/api//v1/")],
        ["upperCase", () => p.replace("/api/v1", "/API/v1")],
        ["dotSegment", () => p.replace("/api/v1/", "/api/v1/./")],
        ["dotDotSegment", () => p.replace("/api/v1/", "/api/v1/x/../")],
        ["encodedSlash", () => p.replace("/api/v1/", "/api%2Fv1/")],
        ["encodedLetter", () => p.replace("/api/", "/%61pi/")]
      ]
      const [shape, make] = rng.pick(shapes)
      target = make() + q
      variant.push(`path:${shape}`)
    }

    // body
    let body: string | undefined
    const payload = op.payloads.length > 0 ? rng.pick(op.payloads) : undefined
    const validValue = (): { value: unknown; kind: string } => {
      if (payload === undefined) return { value: undefined, kind: "none" }
      const template = bodyTemplates[op.id]
      if (template !== undefined && rng.chance(0.6)) return { value: template(context), kind: "template" }
      const sample = rng.pick(samples.of(payload.schema, `${op.id}:${payload.contentType}`))
      const copy = sample === undefined ? undefined : JSON.parse(toJsonText(sample))
      // fields naming a resource get realistic ids
      const fill = (v: unknown) => {
        if (Array.isArray(v)) v.forEach(fill)
        else if (v !== null && typeof v === "object") {
          for (const [k, inner] of Object.entries(v)) {
            const kind = fieldKinds[k]
            if (kind !== undefined && rng.chance(0.7) && (typeof inner === "string" || typeof inner === "number")) {
              // users and service accounts are what a body acts on (group members); the rest are references
              const value = kind === "userId" || kind === "serviceAccountId" ? id(kind) : ref(kind)
              ;(v as any)[k] = typeof inner === "number" ? Number(value) : value
            } else fill(inner)
          }
        }
      }
      fill(copy)
      return { value: copy, kind: "derived" }
    }
    const encodeBody = (value: unknown): string | undefined => {
      if (payload?.form) {
        if (value === undefined) return undefined
        if (value === null || typeof value !== "object") return encodeComponent(String(value))
        const fields = Object.entries(value as object)
        return queryText(fields.map(([k, v]) => [k, typeof v === "string" ? v : toJsonText(v)] as [string, string]))
      }
      return value === undefined ? undefined : toJsonText(value)
    }

    if (cls === "valid") {
      const { value, kind } = validValue()
      variant.push(kind)
      // a Null payload (an optional body) is sent as no body at all, or as `null`
      body = value === null && rng.chance(0.5) ? undefined : encodeBody(value)
      if (body !== undefined) headers["content-type"] = payload!.form ? form : json
    } else if (cls === "mutated") {
      if (payload !== undefined && (variant.length === 0 || rng.chance(0.6))) {
        let { value } = validValue()
        const n = 1 + rng.int(3)
        const kinds: Array<MutationKind> = []
        for (let i = 0; i < n; i++) {
          const kind = rng.pick(mutationKinds)
          kinds.push(kind)
          mutations[kind] = (mutations[kind] ?? 0) + 1
          value = mutateJson(rng, value, kind, maxHuge)
        }
        variant.push(`body:${kinds.join("+")}`)
        body = encodeBody(value)
        if (body === undefined && rng.chance(0.5)) body = ""
      } else if (payload === undefined && rng.chance(0.4)) {
        variant.push("body:unexpected")
        body = toJsonText(rng.pick<unknown>([{ x: 1 }, [], "s", new Raw('{"__proto__":{"polluted":1}}')]))
        mutations.unexpectedBody = (mutations.unexpectedBody ?? 0) + 1
      }
      if (body !== undefined) headers["content-type"] = payload?.form ? form : json
      if (rng.chance(0.15)) {
        variant.push("headers")
        headers["x-request-id"] = rng.pick(["../../etc", "x".repeat(200), "a b", "ok-id-1", "\t", "?"])
        if (rng.chance(0.5)) headers["if-match"] = rng.pick(["abc", "-1", "9007199254740993", '"1"', "*"])
        if (rng.chance(0.5)) headers.accept = rng.pick(["text/html", "application/xml", "*/*;q=0", "application/json;q=0"])
        if (body !== undefined && rng.chance(0.5)) {
          headers["content-type"] = rng.pick([
            "application/json; charset=utf-8",
            "application/json;charset=latin1",
            "Application/JSON",
            "application/problem+json"
          ])
        }
        if (rng.chance(0.2)) headers.expect = rng.pick(["100-continue", "x-unknown", "200-ok"])
      }
    } else {
      // garbage: protocol-level junk through a bare socket, a wrong method, or a body that is not what it claims
      const g = rng.int(10)
      if (g === 0) return protocolGarbage(slot, rng, principal, target, headers, fixtures)
      if (g === 1) {
        // another method may reach another route on the same path (DELETE /members/:id beside GET): the owner's may
        // write only when the path's ids were drawn for a write (spare, never protected); a GET's are stable fixtures
        const methods = principal === "owner" && !ownerWrite ? ["GET", "OPTIONS"] : ["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]
        method = rng.pick(methods.filter((m) => m !== op.method))
        garbage.wrongMethod = (garbage.wrongMethod ?? 0) + 1
        variant.push(`method:${method}`)
      }
      const valid = payload !== undefined ? encodeBody(validValue().value) : undefined
      body = garbageBody(rng, valid)
      const contentType = rng.chance(0.5) ? (payload?.form ? form : json) : rng.pick(garbageContentTypes)
      if (contentType !== "") headers["content-type"] = contentType
      const kind = `body:${contentType || "none"}`
      garbage[kind] = (garbage[kind] ?? 0) + 1
      variant.push(kind)
    }
    // now and then the body comes chunked (no content-length): the fast routes leave such requests to the stack
    const chunked = body !== undefined && body.length > 1 && cls !== "garbage" && rng.chance(0.1)
    if (chunked) variant.push("chunked")
    return { index, op: op.id, cls, principal, variant: variant.join(" ") || "plain", method, target, headers, body, chunked }
  }

  // ---------------------------------------------------------------------------------------------- sending

  const send = (request: FuzzRequest): Promise<Outcome> =>
    request.raw !== undefined
      ? sendRaw(base, request.raw, timeoutMs)
      : new Promise((resolve) => {
          const start = performance.now()
          let settled = false
          const done = (outcome: Omit<Outcome, "ms">) => {
            if (settled) return
            settled = true
            resolve({ ...outcome, ms: Math.round(performance.now() - start) })
          }
          const headers: Record<string, string | number> = { ...request.headers }
          if (request.body !== undefined && !request.chunked) headers["content-length"] = Buffer.byteLength(request.body)
          // (named explicitly: Node's client frames a GET or DELETE body in chunks only when told to)
          if (request.chunked) headers["transfer-encoding"] = "chunked"
          let req: Http.ClientRequest
          try {
            // A chunked body, or one over the body limit, goes on a connection of its own: answered before it has all
            // arrived, Node (any Node server) closes the connection after the answer while still saying keep-alive, and
            // the next request on it would be reset (nodejs/node#9085, #21026)
            const own = request.chunked === true || (request.body?.length ?? 0) > 1024 * 1024
            const target = { host: base.hostname, port: base.port, method: request.method, path: request.target }
            req = Http.request({ ...target, headers, agent: own ? false : agent }, (res) => {
              const chunks: Array<Buffer> = []
              const answer = { status: res.statusCode, headers: res.headers }
              res.on("data", (c: Buffer) => chunks.push(c))
              res.on("end", () => done({ ...answer, text: Buffer.concat(chunks).toString("utf8") }))
              res.on("error", (e) => done({ ...answer, text: "", error: `response: ${e.message}` }))
            })
          } catch (e) {
            return done({ status: undefined, headers: {}, text: "", error: `client refused to send: ${(e as Error).message}` })
          }
          req.setTimeout(timeoutMs, () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)))
          req.on("error", (e) => done({ status: undefined, headers: {}, text: "", error: e.message }))
          if (request.body !== undefined && request.chunked) {
            const half = Math.floor(request.body.length / 2)
            req.write(request.body.slice(0, half))
            req.write(request.body.slice(half))
          } else if (request.body !== undefined) req.write(request.body)
          req.end()
        })

  // ---------------------------------------------------------------------------------------------- checking

  const check = (sentTo: Operation, request: FuzzRequest, outcome: Outcome): Array<string> => {
    const problems: Array<string> = []
    const status = outcome.status
    if (status === undefined) {
      // A body over the limit (or with an Expect the server refuses) is answered before it has all arrived, and
      // the connection closed after the answer; a client still writing the body may see the close (EPIPE, reset)
      // before it has read the answer. The server did answer; the next requests show it still does.
      const refusedMidBody = (request.body?.length ?? 0) > 1024 * 1024 && /EPIPE|ECONNRESET/.test(outcome.error ?? "")
      if (!request.mayGoUnanswered && !refusedMidBody) problems.push(`no answer: ${outcome.error}`)
      return problems
    }
    if (status >= 500) problems.push(`server error ${status}`)
    if (status >= 400 && request.method !== "HEAD") problems.push(...contractProblems(status, outcome))
    if (request.raw !== undefined) return problems
    // a request sent with another method is judged as the operation it reaches (none: it must be refused)
    const op = request.method === sentTo.method ? sentTo : resolve(request.method, request.target)
    if (op === undefined) {
      if (status < 400) problems.push(`${request.method} ${request.target.split("?")[0]} reaches nothing, answered ${status}`)
      return problems
    }
    const unprivileged = request.principal !== "owner"
    if (op.guarded && unprivileged && status < 400) {
      if (request.principal !== "viewer") problems.push(`${request.principal} got ${status} on a guarded operation`)
      else if (isWrite(op)) problems.push(`viewer changed data: ${status} on a write`)
      else if (op.permission !== undefined && !viewerPermissions.has(op.permission)) {
        problems.push(`viewer read without ${op.permission}: ${status}`)
      }
    }
    if (op.guarded && unprivileged && isWrite(op) && status >= 400 && status < 500 && !refusals.has(status)) {
      problems.push(`${request.principal}'s write answered ${status}: the handler ran before authorization refused it`)
    }
    return problems
  }

  // ---------------------------------------------------------------------------------------------- harvesting

  const harvest = (op: Operation, request: FuzzRequest, outcome: Outcome) => {
    if (outcome.status === undefined || outcome.status >= 300 || request.principal !== "owner") return
    let body: any
    try {
      body = JSON.parse(outcome.text)
    } catch {
      return
    }
    const pools = fixtures.pools
    const created = createdKind[op.id]
    if (created !== undefined && body !== null && typeof body === "object") {
      const [kind, field] = created
      pools.add(kind, body[field])
      if (kind === "structureId") pools.add("structureSlug", body.recordSlug)
    }
    if (op.id === "records.upsert") pools.add("recordId", body?.data?.id)
    if (op.method === "DELETE" && op.paramNames.length > 1) {
      const last = op.paramNames[op.paramNames.length - 1]!
      const segments = request.target.split("?")[0]!.split("/")
      const at = op.path.split("/").indexOf(`:${last}`)
      if (at >= 0 && segments[at] !== undefined) pools.remove(paramKind(op, last), decodeURIComponentSafe(segments[at]!))
    }
  }

  // ---------------------------------------------------------------------------------------------- driving

  const byId = new Map(allOps.map((o) => [o.id, o]))
  const patterns = allOps.map((o) => ({ op: o, pattern: new RegExp(`^${o.path.replace(/:\w+/g, "[^/]+")}/?$`) }))
  /** The operation a method and target reach (static segments win over parameters, as in the router). */
  const resolve = (method: string, target: string) => {
    const path = target.split("?")[0]!
    const matches = patterns.filter((p) => p.op.method === method && p.pattern.test(path)).map((p) => p.op)
    return matches.sort((a, b) => a.paramNames.length - b.paramNames.length)[0]
  }
  const one = async (slot: Slot) => {
    const request = build(slot)
    const op = byId.get(request.op)!
    const outcome = await send(request)
    sent++
    byClass[request.cls]++
    byPrincipal[request.principal]++
    const stats = statsOf(op.id)
    stats.classes[request.cls][request.principal]++
    const key = outcome.status === undefined ? "none" : String(outcome.status)
    stats.statuses[key] = (stats.statuses[key] ?? 0) + 1
    statuses[key] = (statuses[key] ?? 0) + 1
    const problems = check(op, request, outcome)
    if (problems.length > 0) fail({ request, outcome, problems })
    if (
      request.cls === "valid" &&
      request.principal !== "owner" &&
      op.guarded &&
      isWrite(op) &&
      op.id !== "members.changePassword" &&
      outcome.status !== undefined &&
      outcome.status !== 401 &&
      outcome.status !== 403 &&
      !edgeRefusal(outcome)
    ) {
      const row = (judgedBeforeRefused[op.id] ??= {})
      const key = `${request.principal} ${outcome.status}`
      row[key] = (row[key] ?? 0) + 1
    } else if (options.trace?.includes(op.id) || options.trace?.includes("*")) {
      log(formatFailure({ request, outcome, problems: ["trace"] }).replace(/^FAILURE: trace/, "TRACE"))
    }
    harvest(op, request, outcome)
    if (sent % 1000 === 0) log(`fuzz: ${sent} requests sent, ${failureCount} failures`)
  }
  const drive = async (slots: ReadonlyArray<Slot>) => {
    let next = 0
    const worker = async () => {
      while (next < slots.length) await one(slots[next++]!)
    }
    await Promise.all(Array.from({ length: Math.max(1, options.concurrency) }, worker))
  }

  const { unprivileged, rest } = schedule(ops, options.requests, options.seed)
  const before = await snapshot(server, fixtures)
  await drive(unprivileged)
  const after = await snapshot(server, fixtures)
  const changed = snapshotDiff(before, after)
  const problem = (text: string) => fail({ request: undefined, outcome: undefined, problems: [text] })
  for (const diff of changed) {
    problem(`unprivileged phase changed ${diff.path}:\n    before ${diff.before}\n    after  ${diff.after}`)
  }
  log(`fuzz: unprivileged phase done (${unprivileged.length} requests, ` + `${changed.length} of ${before.size} snapshot reads changed)`)
  await drive(rest)

  const careful = await carefulPhase(server, fixtures, problem).catch((e) => {
    problem(`careful phase: ${e instanceof Error ? e.message : String(e)}`)
    return [] as Array<string>
  })
  agent.destroy()
  await fixtures.close()
  const logged = server
    .output()
    .split("\n")
    .filter((l) => l.includes("request failed"))
  const serverErrorsLogged = logged.length
  if (serverErrorsLogged > 0) {
    const first = logged
      .slice(0, 3)
      .map((l) => l.slice(0, 3000))
      .join("\n")
    problem(`the server logged ${serverErrorsLogged} failed requests; the first:\n${first}`)
  }
  return {
    seed: options.seed,
    requests: sent,
    durationMs: Math.round(performance.now() - started),
    operations: ops.length,
    perOperation,
    statuses,
    byClass,
    byPrincipal,
    mutations,
    garbage,
    schemas: { derived: samples.derived.size, fallback: samples.fallback.size },
    unprivilegedPhase: { requests: unprivileged.length, snapshotPaths: before.size, changed: changed.length },
    careful,
    judgedBeforeRefused,
    failures,
    failureCount,
    serverErrorsLogged
  }
}

/** A 400 of the edge's input guards (NUL, lone surrogates, depth), which rightly come before authorization. */
const edgeRefusal = (outcome: Outcome) => {
  try {
    return outcome.status === 400 && String(JSON.parse(outcome.text).message).startsWith("Invalid request")
  } catch {
    return false
  }
}

/** The statuses of a refusal (a write an unprivileged caller sends must end in one of them). */
const refusals = new Set([400, 401, 403, 404, 405, 408, 413, 415, 417, 429, 431])

/** What a successful create names, by operation: the pool and the field. */
const createdKind: Record<string, readonly [IdKind, string]> = {
  "workspaces.create": ["workspaceSlug", "slug"],
  "members.add": ["userId", "userId"],
  "serviceAccounts.create": ["serviceAccountId", "id"],
  "groups.create": ["groupId", "id"],
  "groups.addPolicy": ["policyId", "id"],
  "structures.create": ["structureId", "id"],
  "structures.createCollection": ["structureId", "id"],
  "records.create": ["recordId", "id"],
  "records.createA": ["recordId", "id"],
  "webhooks.create": ["webhookId", "id"],
  "webhooks.redeliver": ["deliveryId", "id"],
  "computeFunctions.create": ["functionId", "id"],
  "computeFunctions.publish": ["functionId", "id"],
  "functions.create": ["functionId", "id"],
  "functionTriggers.create": ["triggerId", "id"],
  "functionTriggers.publish": ["triggerId", "id"],
  "drafts.create": ["draftId", "id"],
  "computeFunctions.test": ["runId", "jobId"],
  "functions.execute": ["runId", "jobId"],
  "functionTriggers.execute": ["runId", "jobId"],
  "functionRuns.rerun": ["runId", "jobId"]
}

const decodeURIComponentSafe = (s: string) => {
  try {
    return decodeURIComponent(s)
  } catch {
    return s
  }
}

/** The contract error body: `{error, message, code, statusCode, details, requestId}`, requestId = x-request-id. */
export const contractProblems = (status: number, outcome: Outcome): Array<string> => {
  let body: any
  try {
    body = JSON.parse(outcome.text)
  } catch {
    return [`${status} without a JSON body: ${JSON.stringify(outcome.text.slice(0, 200))}`]
  }
  const problems: Array<string> = []
  if (body === null || typeof body !== "object" || Array.isArray(body)) return [`${status} body is not an object`]
  for (const field of ["error", "message", "code", "requestId"]) {
    if (typeof body[field] !== "string") problems.push(`${status} body lacks ${field} (a string)`)
  }
  if (body.statusCode !== status) problems.push(`${status} body has statusCode ${JSON.stringify(body.statusCode)}`)
  if (!Array.isArray(body.details)) problems.push(`${status} body lacks details (an array)`)
  else if (
    !body.details.every(
      (d: any) =>
        d !== null && typeof d === "object" && typeof d.field === "string" && d.property === d.field && typeof d.message === "string"
    )
  ) {
    problems.push(`${status} body has details that are not {field, property, message}`)
  }
  const header = outcome.headers["x-request-id"]
  if (typeof body.requestId === "string" && header !== body.requestId) {
    problems.push(`${status} requestId ${body.requestId} differs from x-request-id ${header}`)
  }
  return problems
}

// ------------------------------------------------------------------------------------------------ careful phase

/**
 * The operations a fuzz run cannot do at random without wrecking itself, done once each as meant: rotate the signing
 * key (old tokens keep working), change a password (the old token stops working, the new password signs in), delete
 * a throw-away workspace (gone, the workspace under test untouched). Then /health and /ready.
 */
const carefulPhase = async (server: TestServer, fixtures: Fixtures, fail: (problem: string) => void) => {
  const done: Array<string> = []
  const owner = fixtures.tokens.owner
  const expect = async (what: string, method: string, path: string, status: number, token?: string, body?: unknown) => {
    const options = { ...(token !== undefined ? { token } : {}), ...(body !== undefined ? { body } : {}) }
    const res = await server.request(method, path, options)
    if (res.status !== status) {
      fail(`careful: ${what}: ${method} ${path} answered ${res.status}, expected ${status}: ${res.text.slice(0, 500)}`)
    } else done.push(`${what} (${status})`)
    return res
  }
  await expect("rotate the signing key", "POST", "/workspace/api/v1/signing-keys/rotate", 200, owner)
  await expect("an old token after rotation", "GET", `${fixtures.base}/me`, 200, owner)

  const username = `careful-${Crypto.randomBytes(4).toString("hex")}`
  const password = `pw-${Crypto.randomBytes(8).toString("hex")}`
  await expect("add a member", "POST", `${fixtures.base}/members`, 201, owner, { username, password, role: "viewer" })
  const token = await signIn(server, fixtures.workspace, username, password)
  if (token === undefined) fail(`careful: sign in as ${username} failed`)
  else {
    const change = { currentPassword: password, newPassword: `${password}-new` }
    await expect("change one's password", "PUT", `${fixtures.base}/me/password`, 204, token, change)
    await expect("the token from before the change", "GET", `${fixtures.base}/me`, 401, token)
    const fresh = await signIn(server, fixtures.workspace, username, `${password}-new`)
    if (fresh === undefined) fail(`careful: sign in with the new password failed`)
    else await expect("the new password's token", "GET", `${fixtures.base}/me`, 200, fresh)
  }

  const slug = `careful-${Crypto.randomBytes(4).toString("hex")}`
  await expect("create a throw-away workspace", "POST", "/workspace/api/v1/workspaces", 201, owner, { slug })
  await expect("delete the throw-away workspace", "DELETE", `/workspace/api/v1/workspaces/${slug}`, 204, owner)
  await expect("the deleted workspace", "GET", `/workspace/api/v1/workspaces/${slug}`, 404, owner)
  await expect("the workspace under test", "GET", `${fixtures.base}/structures/${fixtures.structure.id}`, 200, owner)
  const viewer = await expect("the viewer", "GET", `${fixtures.base}/me`, 200, fixtures.tokens.viewer)
  if (viewer.body?.role !== "viewer") fail(`careful: the viewer's role is now ${JSON.stringify(viewer.body?.role)}`)
  await expect("health", "GET", "/health", 200)
  await expect("ready", "GET", "/ready", 200)
  if (server.process.exitCode !== null || server.process.signalCode !== null) {
    fail(`the server exited (${server.process.exitCode ?? server.process.signalCode})`)
  }
  return done
}

/**
 * A password sign-in from another loopback address than the fuzzer's: the run's thousands of bad token requests have
 * (rightly) locked 127.0.0.1 out of the token endpoint for a while.
 */
const signIn = (server: TestServer, workspace: string, username: string, password: string): Promise<string | undefined> =>
  new Promise((resolve) => {
    const scope = `openid workspace:${workspace}`
    const body = new URLSearchParams({ grant_type: "password", username, password, scope }).toString()
    const url = new URL(server.baseUrl)
    const req = Http.request(
      {
        host: url.hostname,
        port: url.port,
        method: "POST",
        path: "/oidc/token",
        localAddress: "127.0.0.3",
        headers: { "content-type": "application/x-www-form-urlencoded", "content-length": Buffer.byteLength(body) }
      },
      (res) => {
        let text = ""
        res.on("data", (c) => (text += c))
        res.on("end", () => {
          try {
            resolve(res.statusCode === 200 ? (JSON.parse(text).access_token as string) : undefined)
          } catch {
            resolve(undefined)
          }
        })
      }
    )
    req.on("error", () => resolve(undefined))
    req.end(body)
  })
