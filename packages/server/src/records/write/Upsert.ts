// Upserts: one business key's (a single upsert, with its Idempotency-Key replayed for 24 hours, and the batch of
// upserts queued at the key's actor, RecordKeyEntity), each in one transaction; and upserts of different keys on a
// unique property, sharing the node's group commit (upsertGrouped).
import { conflict, unprocessable } from "@troupe/api/Errors"
import type { Structure } from "@troupe/api/structures/Structure"
import { Effect, Exit, Result } from "effect"
import * as Crypto from "node:crypto"
import type { RecordRow } from "../../query/RecordRow.ts"
import { maskData } from "../../structures/SecretPaths.ts"
import { canonicalJson } from "../../structures/Formats.ts"
import { claimsOf } from "../../structures/StructureFacts.ts"
import type { Writer } from "../model.ts"
import type { PendingCreate, PlannedUpdate, RecordError, UpsertArgs, UpsertItem, UpsertResult } from "../RecordInputs.ts"
import { batchable, checkMatch, withoutMatch, writable } from "../RecordPrepare.ts"
import { changelogRow, eventOf, versionRow } from "../RecordRows.ts"
import { batched, ClaimTaken, type EngineDeps, timestamp } from "./Common.ts"
import type { Creates } from "./Create.ts"
import type { Updates } from "./Update.ts"

export const upsertCreated = (structure: Structure, row: RecordRow): UpsertResult => ({
  status: 201,
  body: { data: { id: row.id, data: maskData(structure, row.data), version: row.version, createdAt: row.createdAt }, operation: "created" }
})

export const upsertUpdated = (structure: Structure, row: RecordRow): UpsertResult => ({
  status: 200,
  body: { data: { id: row.id, data: maskData(structure, row.data), version: row.version, updatedAt: row.updatedAt }, operation: "updated" }
})

/** An upsert that may share a transaction with upserts of other keys. */
interface PendingUpsert {
  readonly structure: Structure
  readonly match: Record<string, unknown>
  readonly data: Record<string, unknown>
  readonly writer: Writer
  /** structure and canonical match: two items of one key never share a batch */
  readonly key: string
}

export const makeUpserts = (deps: EngineDeps & { readonly creates: Creates; readonly updates: Updates }) =>
  Effect.gen(function* () {
    const { common, prep, repo } = deps
    const { transaction } = repo

    /** The live record the match finds, locked, with the transaction's now() (the updatedAt of what it writes). */
    const findMatch = (structure: Structure, match: Record<string, unknown>) =>
      repo.lockMatch(structure.id, claimsOf(structure, match)[0], JSON.stringify(match))

    /**
     * Upsert of one business key. Callers serialise per key (RecordKeyEntity); the row lock keeps it right against
     * writes that reach the matched record another way. With an Idempotency-Key, the key is claimed in the same
     * transaction as the write (a concurrent request with the same key waits on that claim), so a key maps to
     * exactly one committed outcome, replayed for 24 hours; failures store nothing and may be retried.
     */
    const upsert = ({ data, idempotencyKey, match, structure, writer }: UpsertArgs) =>
      Effect.gen(function* () {
        yield* checkMatch(structure, match)
        const workspace = structure.workspaceSlug
        const requestHash = Crypto.createHash("sha256")
          .update(canonicalJson({ s: structure.id, match, data }))
          .digest("hex")
        const once = transaction(
          Effect.gen(function* () {
            if (idempotencyKey !== undefined && !(yield* repo.claimIdempotencyKey(workspace, idempotencyKey, requestHash))) {
              const stored = yield* repo.storedOutcome(workspace, idempotencyKey)
              if (stored === undefined || stored.requestHash !== requestHash) {
                return yield* unprocessable({
                  message: "This Idempotency-Key was used with a different request",
                  code: "IDEMPOTENCY_KEY_REUSED"
                })
              }
              return { status: stored.status, body: stored.body, replayed: true }
            }
            yield* writable(structure)
            const found = yield* findMatch(structure, match)
            const result =
              found !== undefined
                ? upsertUpdated(
                    structure,
                    (yield* deps.updates.updateInTx({ row: found.row, structure, input: { data: withoutMatch(data, match) }, writer })).row
                  )
                : upsertCreated(
                    structure,
                    (yield* deps.creates.createInTx({ structure, input: { data: { ...data, ...match } }, writer })).row
                  )
            if (idempotencyKey !== undefined) yield* repo.storeOutcome(workspace, idempotencyKey, result.status, result.body)
            return { ...result, replayed: false }
          })
        )
        // a writer outside this key's actor (the group commit of upserts) may have created the match between the
        // lookup and the claim: the retry finds it and updates it, as an upsert should (nothing of the first try
        // was written)
        return yield* Effect.catchIf(
          once,
          (e) => e.code === "DUPLICATE_KEY",
          () => once
        )
      })

    /**
     * Several upserts of one match in one transaction, in order (group commit: what queued up at the key's actor
     * while the previous transaction ran). The first creates the record when none matches; each update is planned
     * in memory against the one before it, then the record row is written once and the versions, changelog entries
     * and events of all of them in one statement each. Any failure fails the whole batch (nothing is written); the
     * actor then runs the items one by one, so each gets its own outcome.
     */
    const upsertMany = ({
      items,
      match,
      structure
    }: {
      readonly structure: Structure
      readonly match: Record<string, unknown>
      readonly items: ReadonlyArray<UpsertItem>
    }) =>
      Effect.gen(function* () {
        yield* checkMatch(structure, match)
        return yield* transaction(
          Effect.gen(function* () {
            yield* writable(structure)
            const results: Array<UpsertResult> = []
            let found = yield* findMatch(structure, match)
            let rest = items
            if (found === undefined) {
              const { row } = yield* deps.creates.createInTx({
                structure,
                input: { data: { ...items[0]!.data, ...match } },
                writer: items[0]!.writer
              })
              results.push(upsertCreated(structure, row))
              found = { row, now: row.updatedAt }
              rest = items.slice(1)
            }
            const first = found.row
            let current = first
            const at = yield* timestamp
            const versions: Array<ReturnType<typeof versionRow>> = []
            const changelog: Array<ReturnType<typeof changelogRow>> = []
            const events: Array<ReturnType<typeof eventOf>> = []
            for (const item of rest) {
              const plan = yield* prep.planUpdate(current, structure, { data: withoutMatch(item.data, match) }, item.writer)
              const next: RecordRow = {
                ...current,
                data: plan.data,
                metadata: plan.metadata,
                expiresAt: plan.expiresAt,
                version: plan.version,
                updatedBy: item.writer.userId,
                updatedAt: found.now
              }
              versions.push(versionRow(next, plan.changes, item.writer))
              changelog.push(changelogRow(next, "update", plan.changes, item.writer))
              events.push(eventOf("record.updated", structure, next, current.data, plan.changes, item.writer, at))
              results.push(upsertUpdated(structure, next))
              current = next
            }
            if (current !== first) {
              yield* repo.writeRecordState(current)
              yield* repo.insertVersions(versions)
              yield* repo.insertChangelog(changelog)
              yield* repo.appendEvents(events)
            }
            return results
          })
        )
      })

    // ---------------------------------------------------------------- upserts of different keys

    /**
     * Upserts of different keys written together: their records looked up in one statement; when none exists, the
     * batch is one create statement; otherwise one transaction locks the found records, plans each item as an
     * update or a create, and writes them all. Only matches on a unique property come here: its claim settles a
     * race with another writer creating the same key. When anything fails (that claim taken meanwhile, an invalid
     * item, two items of one key), nothing was written and every item answers `undefined`, to be written through
     * its key's actor (RecordWriter), which gives each its exact outcome.
     */
    const writeUpserts = (
      all: ReadonlyArray<PendingUpsert>
    ): Effect.Effect<ReadonlyArray<Exit.Exit<UpsertResult | undefined, RecordError>>> => {
      // a key's second item waits for the first: it is answered `undefined` (its actor) once this batch committed
      const keys = new Set<string>()
      const first = all.map((item) => !keys.has(item.key) && keys.add(item.key) !== undefined)
      if (first.includes(false)) {
        return Effect.map(writeUpserts(all.filter((_, i) => first[i])), (exits) => {
          let k = 0
          return all.map((_, i) => (first[i] ? exits[k++]! : Exit.succeed(undefined)))
        })
      }
      const items = all
      const deferAll = Effect.succeed(items.map((): Exit.Exit<UpsertResult | undefined, RecordError> => Exit.succeed(undefined)))
      const lookups = items.map(({ match, structure }) => ({
        structureId: structure.id,
        claim: claimsOf(structure, match)[0]!,
        contains: match
      }))
      const newRecord = ({ data, match, structure, writer }: PendingUpsert) =>
        prep.pendingCreate(structure, { data: { ...data, ...match } }, writer)
      /** Every key new: one statement, no transaction (a key created meanwhile fails it on its claim). */
      const allNew = Effect.gen(function* () {
        const creates: Array<PendingCreate> = []
        for (const item of items) creates.push(yield* newRecord(item))
        const written = yield* repo.atomic(deps.creates.createMany(creates))
        return written.map((w): Exit.Exit<UpsertResult | undefined, RecordError> => Exit.succeed(upsertCreated(w.structure, w.row)))
      })
      /** Some keys exist: their records locked, then every item planned as an update or a create, written together. */
      const mixed = transaction(
        Effect.gen(function* () {
          const found = yield* repo.findMatches(lookups, true)
          const creates: Array<readonly [number, PendingCreate]> = []
          const updates: Array<readonly [number, PlannedUpdate]> = []
          for (let k = 0; k < items.length; k++) {
            const { data, match, structure, writer } = items[k]!
            const row = found.get(k)
            if (row === undefined) creates.push([k, yield* newRecord(items[k]!)])
            else {
              const plan = yield* prep.planUpdate(row, structure, { data: withoutMatch(data, match) }, writer)
              updates.push([k, { row, structure, plan, writer, action: "update" }])
            }
          }
          if (new Set(updates.map(([, u]) => u.row.id)).size < updates.length)
            return yield* conflict({ message: "one record, two keys", code: "CONFLICT" })
          const results: Array<UpsertResult> = []
          if (creates.length > 0) {
            const written = yield* deps.creates.createMany(creates.map(([, c]) => c))
            written.forEach((w, j) => (results[creates[j]![0]] = upsertCreated(w.structure, w.row)))
          }
          if (updates.length > 0) {
            const next = yield* deps.updates.applyUpdates(updates.map(([, u]) => u))
            next.forEach((row, j) => (results[updates[j]![0]] = upsertUpdated(updates[j]![1].structure, row)))
          }
          return results.map((r): Exit.Exit<UpsertResult | undefined, RecordError> => Exit.succeed(r))
        })
      )
      return Effect.gen(function* () {
        for (const item of items) yield* writable(item.structure)
        // After a batch of new keys, the next is written as new at once: a key that exists fails the statement on
        // its claim (nothing written), and then the keys are looked up as below.
        if (keysWereNew) {
          const created = yield* Effect.result(allNew)
          if (Result.isSuccess(created)) return created.success
          if (!(created.failure instanceof ClaimTaken)) return yield* Effect.fail(created.failure)
        }
        // the keys looked up first without a lock: an all-new batch needs no transaction
        const existing = yield* repo.findMatches(lookups, false).pipe(Effect.orDie)
        keysWereNew = existing.size === 0
        return yield* keysWereNew ? allNew : mixed
      }).pipe(batched("upsert", items.length, deferAll))
    }

    /** The last upsert batch's keys were all new (the next skips the lookup, see writeUpserts). */
    let keysWereNew = true
    const upserts = yield* common.groupCommit(writeUpserts)

    /** An upsert through the group commit, or `undefined`: it goes through its key's actor (see writeUpserts). */
    const upsertGrouped = ({ data, match, structure, writer }: Omit<UpsertArgs, "idempotencyKey">) =>
      Effect.flatMap(checkMatch(structure, match), () =>
        // creates here skip the reference and file checks (pendingCreate): such structures go through the actor
        claimsOf(structure, match).length === 0 || !batchable(structure)
          ? Effect.succeed(undefined)
          : upserts.submit({ structure, match, data, writer, key: `${structure.id}/${canonicalJson(match)}` })
      )

    return { upsert, upsertMany, upsertGrouped }
  })
