// The two failures of the query core. Both are the caller's fault: the HTTP layer maps each to a 400 (code
// VALIDATION_ERROR or BAD_REQUEST), a parse error with its position, a field error naming the field.
import { Data } from "effect"

/** A syntax error. `position` is the 0-based offset of the offending character or token in `input`. */
export class QueryParseError extends Data.TaggedError("QueryParseError")<{
  readonly message: string
  readonly position: number
  readonly input: string
}> {}

/** A well-formed query naming an unknown field, or using a field in a way its type does not allow. */
export class QueryFieldError extends Data.TaggedError("QueryFieldError")<{
  readonly field: string
  readonly message: string
}> {}
