// The hot single-record writes (create, PATCH, upsert) as answers, shared by their ordinary handlers (records/http.ts)
// and their fast lanes (`fastWriteRoutes`, platform/FastRoutes.ts): the same writer, service calls and rendering
// whichever lane a request takes. Also the request pieces every record write reads: who is writing (`writerOf`),
// `If-Match`, numeric query parameters, skipValidation's permission.
import { can, type Principal } from "@troupe/api/Authorization"
import { forbidden } from "@troupe/api/Errors"
import { Effect } from "effect"
import type { FastAnswer, FastTable } from "../platform/FastRoutes.ts"
import { badParam, flagParam, RecordQuery } from "../query/RecordQuery.ts"
import { StructureService } from "../structures/StructureService.ts"
import type { Writer } from "./model.ts"
import { RecordWriter } from "./RecordEntity.ts"
import { RecordService } from "./RecordService.ts"
import { recordViews } from "./RecordViews.ts"

/** Request headers as either lane has them (Node's may repeat a header as an array). */
export type RequestHeaders = Readonly<Record<string, string | ReadonlyArray<string> | undefined>>

const header = (headers: RequestHeaders, name: string) => {
  const value = headers[name]
  return typeof value === "string" ? value : value?.[0]
}

export const numberParam = (name: string, raw: string | undefined) => {
  if (raw === undefined || raw === "") return Effect.succeed(undefined)
  const n = Number(raw)
  return Number.isFinite(n) ? Effect.succeed(n) : Effect.fail(badParam(name, `${name} must be a number`))
}

/** `If-Match: <version>` (quotes and W/ tolerated; `*` matches any version) or the body's expectedVersion. */
export const ifMatch = (headers: RequestHeaders, body: number | undefined) => {
  const value = header(headers, "if-match")?.trim()
  if (value === undefined || value === "*") return Effect.succeed(body)
  const text = value.replace(/^W\//, "").replace(/"/g, "")
  const v = Number(text)
  return /^\d+$/.test(text) && Number.isSafeInteger(v)
    ? Effect.succeed(v)
    : Effect.fail(badParam("If-Match", "If-Match must be a record version number"))
}

/** skipValidation is for callers who may change structures (they could relax the rules anyway). */
export const mayskip = (principal: Principal, requested: boolean | undefined) =>
  requested === true && !can(principal, "write:structures")
    ? Effect.fail(forbidden({ message: "skipValidation needs the write:structures permission", code: "PERMISSION_DENIED" }))
    : Effect.void

/** Who is writing: the caller, its client's address (the first X-Forwarded-For hop, else the peer) and user agent. */
export const writerOf = (principal: Principal, headers: RequestHeaders, remoteAddress: string | undefined): Writer => {
  const address = header(headers, "x-forwarded-for")?.split(",")[0]?.trim() || remoteAddress
  const userAgent = header(headers, "user-agent")
  return {
    workspace: principal.workspace,
    userId: principal.id,
    userName: principal.name,
    source: principal.kind === "service" ? "service-account" : "api",
    ...(address ? { clientAddress: address.slice(0, 100) } : {}),
    ...(userAgent ? { userAgent: userAgent.slice(0, 200) } : {}),
    canSkipValidation: can(principal, "write:structures")
  }
}

interface CreatePayload {
  readonly structureId: string
  readonly data: Record<string, unknown>
  readonly metadata?: Record<string, unknown> | undefined
}

interface UpdatePayload {
  readonly data: Record<string, unknown>
  readonly metadata?: Record<string, unknown> | undefined
  readonly expectedVersion?: number | undefined
  readonly reason?: string | undefined
  readonly options?: { readonly createVersion?: boolean | undefined; readonly skipValidation?: boolean | undefined } | undefined
}

type Query = Readonly<Record<string, string | undefined>>

/** The answers of the hot writes, given the decoded request, its caller and writer. */
export const writeAnswers = Effect.gen(function* () {
  const records = yield* RecordService
  const writerService = yield* RecordWriter
  const structures = yield* StructureService
  const { resolve, shownRecord } = recordViews(records, yield* RecordQuery, structures)

  /** POST /records */
  const create = (workspace: string, q: Query, payload: CreatePayload, principal: Principal, writer: Writer) =>
    Effect.gen(function* () {
      const structure = yield* resolve(workspace, payload.structureId)
      const { row } = yield* writerService.create({
        structure,
        input: {
          data: payload.data,
          metadata: payload.metadata,
          ttlSeconds: yield* numberParam("ttlSeconds", q.ttlSeconds),
          expiresAt: q.expiresAt
        },
        writer
      })
      return {
        status: 201,
        body: yield* shownRecord("B", structure, row, principal, yield* flagParam("reveal", q.reveal))
      } satisfies FastAnswer
    })

  /** PATCH /records/{id} */
  const update = (
    workspace: string,
    id: string,
    q: Query,
    payload: UpdatePayload,
    principal: Principal,
    writer: Writer,
    headers: RequestHeaders
  ) =>
    Effect.gen(function* () {
      yield* mayskip(principal, payload.options?.skipValidation)
      const written = yield* writerService.update({
        workspace,
        id,
        input: {
          data: payload.data,
          metadata: payload.metadata,
          expectedVersion: yield* ifMatch(headers, payload.expectedVersion),
          createVersion: payload.options?.createVersion,
          skipValidation: payload.options?.skipValidation,
          ttlSeconds: yield* numberParam("ttlSeconds", q.ttlSeconds),
          expiresAt: q.expiresAt,
          clearTtl: yield* flagParam("clearTtl", q.clearTtl),
          reason: payload.reason
        },
        writer
      })
      const structure = yield* structures.get(workspace, written.row.structureId)
      return {
        status: 200,
        body: yield* shownRecord("B", structure, written.row, principal, yield* flagParam("reveal", q.reveal), {
          previousVersion: written.previousVersion
        })
      } satisfies FastAnswer
    })

  /** POST /records/slug/{slug}/upsert, replayed when an Idempotency-Key was seen before */
  const upsert = (
    workspace: string,
    slug: string,
    payload: { readonly match: Record<string, unknown>; readonly data: Record<string, unknown> },
    writer: Writer,
    headers: RequestHeaders
  ) =>
    Effect.gen(function* () {
      const structure = yield* resolve(workspace, slug)
      const key = header(headers, "idempotency-key")
      if (key !== undefined && (key.length === 0 || key.length > 255)) {
        return yield* badParam("Idempotency-Key", "Idempotency-Key must be 1 to 255 characters")
      }
      const result = yield* writerService.upsert({
        workspace,
        structureId: structure.id,
        match: payload.match,
        data: payload.data,
        writer,
        idempotencyKey: key
      })
      return {
        status: result.status,
        body: result.body,
        headers: result.replayed ? { "idempotent-replayed": "true" } : undefined
      } satisfies FastAnswer
    })

  return { create, update, upsert }
})

/** The fast lanes of the hot writes. */
export const fastWriteRoutes: Effect.Effect<FastTable, never, RecordService | RecordWriter | RecordQuery | StructureService> = Effect.map(
  writeAnswers,
  (answers) => ({
    "records.create": ({ headers, params, payload, principal, query, remoteAddress }) =>
      answers.create(params.workspace, query, payload, principal, writerOf(principal, headers, remoteAddress)),
    "records.update": ({ headers, params, payload, principal, query, remoteAddress }) =>
      answers.update(params.workspace, params.id, query, payload, principal, writerOf(principal, headers, remoteAddress), headers),
    "records.upsert": ({ headers, params, payload, principal, remoteAddress }) =>
      answers.upsert(params.workspace, params.slug, payload, writerOf(principal, headers, remoteAddress), headers)
  })
)
