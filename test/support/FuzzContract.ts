// The fuzzer's model of the contract: every operation of the shared HttpApi (walked with HttpApi.reflect), values
// derived from each endpoint's own Schemas (effect/Arbitrary), and what the Schemas do not describe (hostile strings,
// any JSON, raw bytes) from fast-check. Also the mutations of valid values and the garbage sent beside them.
// Size: over 500 lines, kept whole: the contract the fuzzer judges against, every rule beside the others.
import { Api } from "@troupe/api/Api"
import { RateClass, RequiredPermission } from "@troupe/api/Authorization"
import { RequiresUserToken } from "@troupe/api/identity/Identity"
import { Arbitrary, Context, Effect, Schema } from "effect"
import { HttpApi } from "effect/http-api"
import fc from "fast-check"

// ------------------------------------------------------------------------------------------------ random numbers

/** A small seeded generator (mulberry32): every decision of a run follows from FUZZ_SEED and the request's index. */
export class Rng {
  #state: number
  constructor(seed: string) {
    let h = 1779033703 ^ seed.length
    for (let i = 0; i < seed.length; i++) {
      h = Math.imul(h ^ seed.charCodeAt(i), 3432918353)
      h = (h << 13) | (h >>> 19)
    }
    this.#state = h >>> 0
  }
  next(): number {
    let t = (this.#state = (this.#state + 0x6d2b79f5) >>> 0)
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
  int(n: number): number {
    return Math.floor(this.next() * n)
  }
  chance(p: number): boolean {
    return this.next() < p
  }
  pick<A>(items: ReadonlyArray<A>): A {
    return items[this.int(items.length)]!
  }
  /** A seed for fast-check or Arbitrary sampling. */
  seed(): number {
    return this.int(0x7fffffff)
  }
  /** One value of a fast-check arbitrary, reproducible from this generator. */
  fc<A>(arb: fc.Arbitrary<A>): A {
    return fc.sample(arb, { seed: this.seed(), numRuns: 1 })[0]!
  }
}

// ------------------------------------------------------------------------------------------------ operations

export interface Payload {
  readonly contentType: string
  readonly form: boolean
  readonly schema: Schema.Top
}

/** One endpoint of the contract, as the fuzzer drives it. */
export interface Operation {
  /** `group.endpoint` */
  readonly id: string
  readonly group: string
  readonly name: string
  readonly method: string
  /** the router path, `/workspace/:workspace/api/v1/records/:id` */
  readonly path: string
  readonly paramNames: ReadonlyArray<string>
  readonly params: Schema.Top | undefined
  readonly query: Schema.Top | undefined
  readonly payloads: ReadonlyArray<Payload>
  /** the endpoint's RequiredPermission annotation */
  readonly permission: string | undefined
  readonly rateClass: string | undefined
  /** behind the Authorization middleware */
  readonly guarded: boolean
  readonly userOnly: boolean
}

/** Every operation of the shared HttpApi definition, in declaration order. */
export const operations = (): ReadonlyArray<Operation> => {
  const out: Array<Operation> = []
  HttpApi.reflect(Api as unknown as HttpApi.Top, {
    onGroup: () => {},
    onEndpoint: ({ endpoint, group, mergedAnnotations, middleware }) => {
      const payloads: Array<Payload> = []
      for (const [contentType, entry] of endpoint.payload) {
        if (entry.encoding._tag === "Stream") continue
        for (const schema of entry.schemas) {
          payloads.push({ contentType, form: entry.encoding._tag === "FormUrlEncoded", schema: schema as Schema.Top })
        }
      }
      out.push({
        id: `${group.identifier}.${endpoint.identifier}`,
        group: group.identifier,
        name: endpoint.identifier,
        method: endpoint.method,
        path: endpoint.path,
        paramNames: [...endpoint.path.matchAll(/:(\w+)/g)].map((m) => m[1]!),
        params: endpoint.params,
        query: endpoint.query,
        payloads,
        permission: Context.get(mergedAnnotations, RequiredPermission),
        rateClass: Context.get(mergedAnnotations, RateClass),
        guarded: middleware.size > 0,
        userOnly: Context.get(mergedAnnotations, RequiresUserToken)
      })
    }
  })
  return out
}

/** POSTs that only read (they change nothing whoever calls them). */
export const readOnlyPosts = new Set([
  "structures.validate",
  "query.query",
  "query.aggregate",
  "oidc.token",
  "notification.previewDraft",
  "notification.previewTemplate",
  "storage.signedUrl"
])

/** Whether the operation may change data. */
export const isWrite = (op: Operation) => op.method !== "GET" && !readOnlyPosts.has(op.id)

// ------------------------------------------------------------------------------------------------ path parameters

/** What a path parameter names: the pool its realistic values come from. */
export type IdKind =
  | "workspace"
  | "workspaceSlug"
  | "structureId"
  | "structureSlug"
  | "recordId"
  | "webhookId"
  | "deliveryId"
  | "functionId"
  | "triggerId"
  | "draftId"
  | "runId"
  | "serviceAccountId"
  | "groupId"
  | "policyId"
  | "userId"
  | "version"
  | "free"

export const paramKind = (op: Operation, name: string): IdKind => {
  if (name === "workspace") return "workspace"
  switch (op.group) {
    case "structures":
      return name === "recordSlug" ? "structureSlug" : name === "version" ? "version" : "structureId"
    case "records":
      return name === "slug" ? "structureSlug" : "recordId"
    case "query":
      return "structureSlug"
    case "webhooks":
      return name === "deliveryId" ? "deliveryId" : "webhookId"
    case "computeFunctions":
    case "functions":
      return op.name === "publish" ? "draftId" : "functionId"
    case "functionTriggers":
      return op.name === "publish" ? "draftId" : "triggerId"
    case "drafts":
      return "draftId"
    case "functionRuns":
      return "runId"
    case "serviceAccounts":
      return "serviceAccountId"
    case "members":
      return "userId"
    case "groups":
      return name === "groupId" || name === "policyId" || name === "userId" ? name : "serviceAccountId"
    case "workspaces":
      return "workspaceSlug"
    default:
      return "free"
  }
}

/** Body fields (at any depth) that name a resource: realistic ids go there. */
export const fieldKinds: Record<string, IdKind> = {
  structureId: "structureId",
  functionId: "functionId",
  triggerId: "triggerId",
  jobId: "runId",
  userId: "userId",
  serviceAccountId: "serviceAccountId"
}

// ------------------------------------------------------------------------------------------------ schema samples

export type Json = null | boolean | number | string | ReadonlyArray<Json> | { readonly [k: string]: Json }

/**
 * Encoded samples of one Schema, drawn once per run with effect/Arbitrary at several sizes (small values and large
 * ones), falling back to fast-check's JSON values when the engine cannot derive the Schema.
 */
export class SchemaSamples {
  readonly #cache = new Map<Schema.Top, ReadonlyArray<unknown>>()
  readonly derived = new Set<Schema.Top>()
  readonly fallback = new Set<Schema.Top>()
  readonly seed: string
  constructor(seed: string) {
    this.seed = seed
  }

  of(schema: Schema.Top, label: string): ReadonlyArray<unknown> {
    const cached = this.#cache.get(schema)
    if (cached !== undefined) return cached
    const encode = Schema.encodeUnknownSync(schema as Schema.Codec<unknown, unknown>)
    const values: Array<unknown> = []
    try {
      const arb = Arbitrary.schema(schema as Schema.Codec<unknown, unknown>)
      for (const size of [1, 4, 10, 24]) {
        const sample = Effect.runSync(
          Effect.orElseSucceed(
            Arbitrary.sampleEffect(arb, { count: 8, size, seed: `${this.seed}:${label}:${size}` }),
            () => [] as ReadonlyArray<unknown>
          )
        )
        for (const value of sample) {
          try {
            values.push(encode(value))
          } catch {
            // a value the Schema cannot encode back: skip it
          }
        }
      }
      if (values.length > 0) this.derived.add(schema)
    } catch {
      // the engine cannot derive this Schema: fast-check below
    }
    if (values.length === 0) {
      this.fallback.add(schema)
      const seed = new Rng(`${this.seed}:${label}`).seed()
      values.push(...fc.sample(fc.jsonValue({ maxDepth: 3 }), { seed, numRuns: 32 }))
    }
    this.#cache.set(schema, values)
    return values
  }
}

// ------------------------------------------------------------------------------------------------ hostile values

/** JSON text spliced in verbatim (numbers JSON.stringify cannot write, deep nesting). */
export class Raw {
  readonly text: string
  constructor(text: string) {
    this.text = text
  }
}

/** JSON text of a value that may hold Raw pieces and own `__proto__` keys. */
export const toJsonText = (value: unknown): string => {
  if (value instanceof Raw) return value.text
  if (Array.isArray(value)) return `[${value.map(toJsonText).join(",")}]`
  if (value !== null && typeof value === "object") {
    return `{${Object.keys(value)
      .map((k) => `${JSON.stringify(k)}:${toJsonText((value as any)[k])}`)
      .join(",")}}`
  }
  return value === undefined ? "null" : JSON.stringify(value)
}

/** Sets an own enumerable property, even `__proto__`. */
export const setOwn = (target: object, key: string, value: unknown) => {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true })
}

export const prototypeKeys = [
  "__proto__",
  "constructor",
  "prototype",
  "toString",
  "valueOf",
  "hasOwnProperty",
  "__defineGetter__",
  "isPrototypeOf"
]

const oddKeys = [
  ...prototypeKeys,
  "",
  " ",
  "\u0000",
  "\ud800",
  "$where",
  "$or",
  "data.title",
  "a".repeat(300),
  "id",
  "version",
  "workspace",
  "role",
  "isPlatformAdmin",
  "permissions",
  "deletedAt"
]

const unsafeNumbers = [
  "9007199254740993",
  "-9007199254740993",
  "1e308",
  "1e309",
  "-1e309",
  "-0",
  "1e-400",
  "123456789012345678901234567890",
  "2147483648",
  "-2147483649",
  "4294967296",
  "0.1e1",
  "1E2",
  "0.0000001",
  "-1",
  "0",
  "3.5"
]

/** One value of another type than `value`. */
const otherType = (rng: Rng, value: unknown): unknown => {
  const candidates: Array<unknown> = [
    0,
    -1,
    1.5,
    "",
    "x",
    "1",
    "true",
    "null",
    true,
    false,
    null,
    [],
    {},
    [1, "a"],
    { a: 1 },
    new Raw(rng.pick(unsafeNumbers))
  ]
  const typeOf = (u: unknown) => (Array.isArray(u) ? "array" : u === null ? "null" : typeof u)
  const others = candidates.filter((c) => typeOf(c) !== typeOf(value))
  return rng.pick(others)
}

/** A hostile string: NUL, lone surrogates, huge, unicode, injection-looking text, or fast-check's own. */
export const hostileString = (rng: Rng, maxHuge = 256 * 1024): string => {
  switch (rng.int(12)) {
    case 0:
      return `a\u0000b`
    case 1:
      return rng.pick(["\ud800", "\udfff", "x\udc00y", "\ud83d"])
    case 2:
      return "x".repeat(rng.pick([1000, 10_000, 100_000, maxHuge]))
    case 3:
      return rng.pick([
        "'; DROP TABLE records; --",
        '" OR 1=1 --',
        "${7*7}",
        "{{7*7}}",
        "<script>alert(1)</script>",
        "../../etc/passwd",
        "%00",
        "%ZZ",
        "\\u0000"
      ])
    case 4:
      return rng.pick(["🚀", "ÄÖÜß", "\u202e", "\ufeff", "\u200b", "e\u0301", "𝓊𝓃𝒾𝒸ℴ𝒹ℯ", "\r\n", "\t"])
    case 5:
      return rng.pick(prototypeKeys)
    case 6:
      return rng.fc(fc.string({ unit: "binary", maxLength: 64 }))
    case 7:
      return rng.fc(fc.string({ unit: "grapheme", maxLength: 200 }))
    case 8:
      return rng.pick(["", " ", "null", "undefined", "NaN", "-1", "0", "1e309", "true", "[]", "{}"])
    case 9:
      return rng.fc(fc.uuid())
    case 10:
      return rng.fc(fc.webUrl())
    default:
      return rng.fc(fc.string({ maxLength: 40 }))
  }
}

/** Nested arrays or objects, `depth` containers deep, as raw text. */
export const deepNesting = (rng: Rng, depth: number): Raw =>
  rng.chance(0.5) ? new Raw("[".repeat(depth) + "]".repeat(depth)) : new Raw(`${'{"a":'.repeat(depth)}1${"}".repeat(depth)}`)

type Path = ReadonlyArray<string | number>

/** Paths to every value inside `root` (the root included), at most `limit`. */
const pathsOf = (root: unknown, limit = 200): Array<Path> => {
  const out: Array<Path> = [[]]
  const walk = (value: unknown, path: Path) => {
    if (out.length >= limit) return
    if (Array.isArray(value)) {
      value.forEach((v, i) => {
        out.push([...path, i])
        walk(v, [...path, i])
      })
    } else if (value !== null && typeof value === "object" && !(value instanceof Raw)) {
      for (const k of Object.keys(value)) {
        out.push([...path, k])
        walk((value as any)[k], [...path, k])
      }
    }
  }
  walk(root, [])
  return out
}

const getAt = (root: unknown, path: Path): unknown => path.reduce<any>((v, k) => (v === null || v === undefined ? undefined : v[k]), root)

/** Returns the new root (a root path replaces the whole value). */
const setAt = (root: unknown, path: Path, value: unknown): unknown => {
  if (path.length === 0) return value
  const parent = getAt(root, path.slice(0, -1)) as any
  const key = path[path.length - 1]!
  if (Array.isArray(parent)) parent[key as number] = value
  else if (parent !== null && typeof parent === "object") setOwn(parent, String(key), value)
  return root
}

const deleteAt = (root: unknown, path: Path): unknown => {
  if (path.length === 0) return undefined
  const parent = getAt(root, path.slice(0, -1)) as any
  const key = path[path.length - 1]!
  if (Array.isArray(parent)) parent.splice(key as number, 1)
  else if (parent !== null && typeof parent === "object") delete parent[key]
  return root
}

export const mutationKinds = [
  "wrongType",
  "missingField",
  "extraField",
  "hugeString",
  "deepNesting",
  "nul",
  "loneSurrogate",
  "unsafeNumber",
  "prototypeKey",
  "bigArray",
  "emptyBody",
  "stringly"
] as const
export type MutationKind = (typeof mutationKinds)[number]

/** One mutation of a JSON value (mutated in place where it can be; returns the new root). */
export const mutateJson = (rng: Rng, root: unknown, kind: MutationKind, maxHuge: number): unknown => {
  const paths = pathsOf(root)
  const objects = paths.filter((p) => {
    const v = getAt(root, p)
    return v !== null && typeof v === "object" && !Array.isArray(v) && !(v instanceof Raw)
  })
  const leaves = paths.filter((p) => {
    const v = getAt(root, p)
    return v === null || typeof v !== "object"
  })
  const strings = paths.filter((p) => typeof getAt(root, p) === "string")
  const anyPath = () => rng.pick(paths)
  switch (kind) {
    case "wrongType": {
      const path = anyPath()
      return setAt(root, path, otherType(rng, getAt(root, path)))
    }
    case "missingField": {
      const keyed = paths.filter((p) => p.length > 0)
      return keyed.length === 0 ? undefined : deleteAt(root, rng.pick(keyed))
    }
    case "extraField": {
      if (objects.length === 0) return setAt(root, [], { [rng.pick(oddKeys)]: rng.fc(fc.jsonValue({ maxDepth: 2 })) })
      const target = getAt(root, rng.pick(objects)) as object
      const key = rng.chance(0.5) ? rng.pick(oddKeys) : rng.fc(fc.string({ maxLength: 12 }))
      setOwn(target, key, rng.fc(fc.jsonValue({ maxDepth: 2 })))
      return root
    }
    case "hugeString": {
      const path = strings.length > 0 ? rng.pick(strings) : anyPath()
      // now and then beyond the server's body limit (413)
      return setAt(root, path, "z".repeat(rng.pick([20_000, 100_000, maxHuge, maxHuge, 3 * 1024 * 1024])))
    }
    case "deepNesting": {
      // around the edge's limit (64 by default) and far beyond it
      const depth = rng.pick([10, 32, 63, 64, 65, 200, 5000])
      return setAt(root, leaves.length > 0 ? rng.pick(leaves) : [], deepNesting(rng, depth))
    }
    case "nul": {
      const path = strings.length > 0 ? rng.pick(strings) : anyPath()
      const current = getAt(root, path)
      return setAt(root, path, `${typeof current === "string" ? current : ""}\u0000`)
    }
    case "loneSurrogate": {
      const path = strings.length > 0 ? rng.pick(strings) : anyPath()
      const current = getAt(root, path)
      return setAt(root, path, `${typeof current === "string" ? current : ""}${rng.pick(["\ud800", "\udfff", "\ud83d"])}`)
    }
    case "unsafeNumber":
      return setAt(root, leaves.length > 0 ? rng.pick(leaves) : anyPath(), new Raw(rng.pick(unsafeNumbers)))
    case "prototypeKey": {
      const value = rng.pick<unknown>([
        { isPlatformAdmin: true, role: "owner", permissions: ["*"] },
        { prototype: { polluted: true } },
        "x",
        null,
        1,
        []
      ])
      if (objects.length === 0) {
        const wrapper = {}
        setOwn(wrapper, rng.pick(prototypeKeys), value)
        return wrapper
      }
      setOwn(getAt(root, rng.pick(objects)) as object, rng.pick(prototypeKeys), value)
      return root
    }
    case "bigArray": {
      const n = rng.pick([1001, 5000, 20_000])
      return setAt(
        root,
        anyPath(),
        Array.from({ length: n }, (_, i) => (rng.chance(0.5) ? i : { i }))
      )
    }
    case "emptyBody":
      return rng.pick<unknown>([{}, [], "", null, 0, undefined])
    case "stringly": {
      const path = leaves.length > 0 ? rng.pick(leaves) : anyPath()
      const v = getAt(root, path)
      return setAt(root, path, typeof v === "string" ? (Number.isNaN(Number(v)) ? 1 : Number(v)) : JSON.stringify(v ?? null))
    }
  }
}

// ------------------------------------------------------------------------------------------------ garbage

/** Bodies that are not JSON, or not the JSON they claim to be. */
export const garbageBody = (rng: Rng, valid: string | undefined): string => {
  switch (rng.int(9)) {
    case 0:
      return rng.pick([
        "{",
        "}",
        "[",
        '{"a":}',
        "[1,2",
        "nul",
        "{'a':1}",
        '{"a":1,}',
        "[,]",
        '"unterminated',
        '{"a" 1}',
        "01",
        "+1",
        ".5",
        "NaN",
        "Infinity",
        "undefined",
        '{"a":1}{"b":2}'
      ])
    case 1:
      return valid !== undefined && valid.length > 1 ? valid.slice(0, 1 + rng.int(valid.length - 1)) : '{"trunc'
    case 2:
      return `\ufeff${valid ?? "{}"}`
    case 3:
      return rng.fc(fc.string({ unit: "binary", minLength: 1, maxLength: 300 }))
    case 4:
      return Buffer.from(rng.fc(fc.uint8Array({ minLength: 1, maxLength: 300 }))).toString("latin1")
    case 5:
      return `${valid ?? "{}"}${rng.pick(["garbage", "\u0000", "}", " ,"])}`
    case 6:
      return "a=1&b=2&grant_type=password"
    case 7:
      return '<?xml version="1.0"?><a>1</a>'
    default:
      return " ".repeat(rng.pick([1, 100, 10_000]))
  }
}

export const garbageContentTypes = [
  "text/plain",
  "application/xml",
  "multipart/form-data; boundary=xyz",
  "application/x-www-form-urlencoded",
  "application/octet-stream",
  "application/json; charset=utf-16",
  "application/vnd.api+json",
  "application/jsonx",
  "",
  "json",
  "application/json, text/plain",
  "*/*",
  "APPLICATION/JSON"
]

/** Every decision a request makes is a function of (seed, index): a run can be replayed. */
export const rngFor = (seed: string, index: number) => new Rng(`${seed}#${index}`)
