// Failed record writes, for whoever wants to hear of them (event-driven triggers on record_*_failed). The record
// engine calls the hook after the failed transaction rolled back, so what the hook writes stands on its own. The
// default does nothing; compute provides one that costs nothing unless a trigger of that workspace subscribes.
import type { Structure } from "@troupe/api/structures/Structure"
import { Context, Effect } from "effect"
import type { Writer } from "./model.ts"

export interface RecordFailure {
  readonly kind: "create" | "update" | "delete"
  readonly structure: Structure
  /** update and delete: the record written to */
  readonly recordId: string | undefined
  readonly error: { readonly statusCode: number; readonly code: string; readonly message: string; readonly details: ReadonlyArray<unknown> }
  /** what the caller sent: the data of a create or update, `{permanent}` for a delete */
  readonly input: unknown
  readonly writer: Writer
}

export const RecordFailureHook = Context.Reference<(failure: RecordFailure) => Effect.Effect<void>>(
  "@troupe/server/records/RecordFailureHook",
  { defaultValue: () => () => Effect.void }
)
