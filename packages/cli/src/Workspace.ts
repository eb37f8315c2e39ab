/**
 * Reads the CLI needs from a workspace, paged to the end.
 *
 * @since 0.1.0
 */
import { Effect, Schema } from "effect"
import { CliFailure } from "./Output.ts"
import { TroupeApi } from "./TroupeApi.ts"

const StructurePage = Schema.Struct({
  data: Schema.Array(Schema.Record(Schema.String, Schema.Unknown)),
  meta: Schema.optionalKey(Schema.Struct({ total: Schema.optionalKey(Schema.Number) }))
})

/** Decodes an answer, or fails naming the route that answered it. */
export const decode =
  <S extends Schema.Constraint & Schema.ConstraintDecoder<unknown>>(schema: S, what: string) =>
  (value: unknown) =>
    Schema.decodeUnknownEffect(schema)(value).pipe(
      Effect.mapError((e) => new CliFailure({ message: `unexpected answer from ${what}: ${e.message}` }))
    ) as Effect.Effect<S["Type"], CliFailure>

/** Every live structure of the workspace, as the API answers them. */
export const listStructures = Effect.gen(function* () {
  const api = yield* TroupeApi
  const all: Array<Record<string, unknown>> = []
  for (let page = 1; ; page++) {
    const answer = yield* api
      .call("GET", "/structures", { query: { limit: 500, page } })
      .pipe(Effect.flatMap(decode(StructurePage, "GET /structures")))
    all.push(...answer.data)
    if (answer.data.length < 500 || all.length >= (answer.meta?.total ?? Infinity)) return all
  }
})
