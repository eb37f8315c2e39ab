// What a run is before it is stored: which code on which trigger, with what input, acting as whom; and its stored
// form (a fresh id, executionParams encrypted and bound to that id). Shared by everything that starts runs.
import type { ExecutionSource } from "@troupe/api/compute/Compute"
import * as Crypto from "node:crypto"
import { type ActingAs, sha256 } from "./model.ts"
import type { FiredTrigger, NewRun } from "./RunRepo.ts"

/** What a run is: which code on which trigger, with what input, acting as whom. */
export interface RunSpec {
  readonly workspace: string
  readonly functionId: string | null
  readonly triggerId: string | null
  readonly source: ExecutionSource
  /** test executions carry their own code */
  readonly code?: string | undefined
  readonly executionParams: unknown
  readonly actingAs: ActingAs
  readonly executionContext: Record<string, unknown>
  readonly depth?: number | undefined
  readonly rerun?: { readonly originalRunId: string; readonly by: string; readonly reason: string | null } | undefined
  /** ISO */
  readonly scheduledFor?: string | undefined
  /** a trigger fired (not a test or re-run): a `trigger.fired` event is written with the run */
  readonly fired?: FiredTrigger | undefined
  /** set: the run is stored already failed with this error (a trigger chain past its depth limit) */
  readonly error?: string | undefined
}

/** The stored parameters of a run are bound to it: they cannot be moved to another run. */
export const parametersContext = (runId: string) => `run-parameters:${runId}`

/** The stored form of a new run: a fresh id, its executionParams encrypted and bound to that id. */
export const makeNewRun =
  (encrypt: (value: unknown, context: string) => string) =>
  (spec: RunSpec): NewRun => {
    const id = Crypto.randomUUID()
    return {
      id,
      workspace: spec.workspace,
      functionId: spec.functionId,
      triggerId: spec.triggerId,
      source: spec.source,
      code: spec.code ?? null,
      codeHash: spec.code === undefined ? null : sha256(spec.code),
      parameters: encrypt(spec.executionParams ?? {}, parametersContext(id)),
      executionContext: spec.executionContext,
      actingAs: spec.actingAs,
      depth: spec.depth ?? 0,
      isRerun: spec.rerun !== undefined,
      originalRunId: spec.rerun?.originalRunId ?? null,
      rerunBy: spec.rerun?.by ?? null,
      rerunReason: spec.rerun?.reason ?? null,
      scheduledFor: spec.scheduledFor ?? null,
      fired: spec.fired,
      error: spec.error
    }
  }
