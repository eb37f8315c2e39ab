// The parsers throw their own failure class from deep inside recursive descent; this turns one run into a Result.
import { Result } from "effect"

/**
 * Runs `parse`; what it throws becomes the failure `failureOf` makes of it, or, when `failureOf` answers
 * `undefined` (not a parse failure: a bug), is thrown on.
 */
export const tryParse = <A, E>(parse: () => A, failureOf: (thrown: unknown) => E | undefined): Result.Result<A, E> =>
  Result.try({
    try: parse,
    catch: (thrown) => {
      const failure = failureOf(thrown)
      if (failure === undefined) throw thrown
      return failure
    }
  })
