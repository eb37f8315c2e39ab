// The fuzzer's vocabulary: request classes, a scheduled slot, a request as sent, its outcome, a failure and the
// report of a run (FuzzRunner makes them, FuzzWire sends the raw ones, FuzzReport prints them).
import type { Operation } from "./FuzzContract.ts"
import type { PrincipalName } from "./FuzzFixtures.ts"

export const classes = ["valid", "mutated", "garbage"] as const
export type RequestClass = (typeof classes)[number]

export interface FuzzOptions {
  /** requests in all (the careful phase adds a few) */
  readonly requests: number
  readonly seed: string
  readonly concurrency: number
  /** only these operation ids (comma-separated FUZZ_ONLY) */
  readonly only?: ReadonlyArray<string> | undefined
  /** the largest string a mutation sends (the server's body limit is above it; a few bodies go beyond) */
  readonly maxHuge?: number | undefined
  readonly timeoutMs?: number | undefined
  readonly log?: ((line: string) => void) | undefined
  /** log every request of these operation ids (`*`: all) with its answer (FUZZ_TRACE) */
  readonly trace?: ReadonlyArray<string> | undefined
}

export interface FuzzRequest {
  readonly index: number
  readonly op: string
  readonly cls: RequestClass
  readonly principal: PrincipalName
  /** how it was built: template / derived / mutations / garbage kind */
  readonly variant: string
  readonly method: string
  /** path and query, as sent */
  readonly target: string
  readonly headers: Record<string, string>
  readonly body?: string | undefined
  /** sent with Transfer-Encoding: chunked, in two chunks */
  readonly chunked?: boolean | undefined
  /** sent through a bare socket as is (protocol garbage) */
  readonly raw?: { readonly text: string; readonly halfClose: boolean } | undefined
  /** protocol garbage the server may rightly leave unanswered (a body that never arrives) */
  readonly mayGoUnanswered?: boolean | undefined
}

export interface Outcome {
  readonly status: number | undefined
  readonly headers: Record<string, string | Array<string> | undefined>
  readonly text: string
  readonly error?: string | undefined
  readonly ms: number
}

export interface Failure {
  readonly request: FuzzRequest | undefined
  readonly outcome: Outcome | undefined
  readonly problems: ReadonlyArray<string>
}

export interface OperationStats {
  /** class -> principal -> requests */
  readonly classes: Record<RequestClass, Record<PrincipalName, number>>
  readonly statuses: Record<string, number>
}

export interface FuzzReport {
  readonly seed: string
  readonly requests: number
  readonly durationMs: number
  readonly operations: number
  readonly perOperation: Map<string, OperationStats>
  readonly statuses: Record<string, number>
  readonly byClass: Record<RequestClass, number>
  readonly byPrincipal: Record<PrincipalName, number>
  readonly mutations: Record<string, number>
  readonly garbage: Record<string, number>
  readonly schemas: { readonly derived: number; readonly fallback: number }
  readonly unprivilegedPhase: { readonly requests: number; readonly snapshotPaths: number; readonly changed: number }
  readonly careful: ReadonlyArray<string>
  /**
   * Valid writes of a caller without the permission that were answered with something else than 401/403 (the
   * handler judged them first: an existence or validity oracle, not a change). Operation -> "principal status" -> n.
   */
  readonly judgedBeforeRefused: Record<string, Record<string, number>>
  readonly failures: ReadonlyArray<Failure>
  readonly failureCount: number
  readonly serverErrorsLogged: number
}

export interface Slot {
  readonly index: number
  readonly op: Operation
  readonly cls: RequestClass
  readonly principal: PrincipalName
}
