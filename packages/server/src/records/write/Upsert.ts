// Upserts of one business key: a single upsert (with its Idempotency-Key, replayed for 24 hours) and the batch of
// upserts queued at one key's actor (RecordKeyEntity), each in one transaction over RecordWrites' pieces. Upserts of
// different keys share the node's group commit instead (GroupWrites).
import { unprocessable } from "@troupe/api/Errors"
import type { Structure } from "@troupe/api/structures/Structure"
import { Effect } from "effect"
import * as Crypto from "node:crypto"
import type { RecordRow } from "../../query/RecordRow.ts"
import { maskData } from "../../structures/SecretPaths.ts"
import { canonicalJson } from "../../structures/Formats.ts"
import { claimsOf } from "../../structures/StructureFacts.ts"
import type { Writer } from "../model.ts"
import type { UpsertItem, UpsertResult } from "../RecordInputs.ts"
import { checkMatch, type Preparation, withoutMatch, writable } from "../RecordPrepare.ts"
import type { RecordRepo } from "../RecordRepo.ts"
import { changelogRow, eventOf, versionRow } from "../RecordRows.ts"
import { timestamp, type Writes } from "./Writes.ts"

export const upsertCreated = (structure: Structure, row: RecordRow): UpsertResult => ({
  status: 201,
  body: { data: { id: row.id, data: maskData(structure, row.data), version: row.version, createdAt: row.createdAt }, operation: "created" }
})

export const upsertUpdated = (structure: Structure, row: RecordRow): UpsertResult => ({
  status: 200,
  body: { data: { id: row.id, data: maskData(structure, row.data), version: row.version, updatedAt: row.updatedAt }, operation: "updated" }
})

export const makeUpserts = (deps: { readonly repo: RecordRepo["Service"]; readonly prep: Preparation; readonly writes: Writes }) => {
  const { prep, repo, writes } = deps
  const { transaction } = repo
  const { createInTx, updateInTx } = writes

  /** The live record the match finds, locked, with the transaction's now() (the updatedAt of what it writes). */
  const findMatch = (structure: Structure, match: Record<string, unknown>) =>
    repo.lockMatch(structure.id, claimsOf(structure, match)[0], JSON.stringify(match))

  /**
   * Upsert of one business key. Callers serialise per key (RecordKeyEntity); the row lock keeps it right against
   * writes that reach the matched record another way. With an Idempotency-Key, the key is claimed in the same
   * transaction as the write (a concurrent request with the same key waits on that claim), so a key maps to
   * exactly one committed outcome, replayed for 24 hours; failures store nothing and may be retried.
   */
  const upsert = (
    structure: Structure,
    match: Record<string, unknown>,
    data: Record<string, unknown>,
    writer: Writer,
    idempotencyKey?: string
  ) =>
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
              ? upsertUpdated(structure, (yield* updateInTx(found.row, structure, { data: withoutMatch(data, match) }, writer)).row)
              : upsertCreated(structure, (yield* createInTx(structure, { data: { ...data, ...match } }, writer)).row)
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
  const upsertMany = (structure: Structure, match: Record<string, unknown>, items: ReadonlyArray<UpsertItem>) =>
    Effect.gen(function* () {
      yield* checkMatch(structure, match)
      return yield* transaction(
        Effect.gen(function* () {
          yield* writable(structure)
          const results: Array<UpsertResult> = []
          let found = yield* findMatch(structure, match)
          let rest = items
          if (found === undefined) {
            const { row } = yield* createInTx(structure, { data: { ...items[0]!.data, ...match } }, items[0]!.writer)
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

  return { findMatch, upsert, upsertMany }
}
