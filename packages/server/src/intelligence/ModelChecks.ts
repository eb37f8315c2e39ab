// The optional model path of validation scans: with TROUPE_AI_URL (an OpenAI-compatible chat-completions endpoint;
// TROUPE_AI_MODEL, TROUPE_AI_KEY) the structure's plain-language rules are checked by that model, in batches of
// records. Its answer must be JSON of the shape below (checked with Effect Schema); an answer that is not, a
// timeout, a 429 or any other non-2xx ends the scan with a clear batch error. The model never writes: what it
// proposes is stored as `source: "model"` suggestions that a person accepts or rejects. A token budget per scan
// (TROUPE_AI_TOKEN_BUDGET, from the answers' `usage`) stops further batches once spent.
import { Config, Data, Effect, Option, Schema } from "effect"
import type { Finding } from "./Checks.ts"

export class ModelError extends Data.TaggedError("ModelError")<{ readonly message: string }> {}

export interface ModelChecker {
  readonly configured: boolean
  readonly check: (
    rules: ReadonlyArray<string>,
    fields: ReadonlyArray<string>,
    rows: ReadonlyArray<{ readonly id: string; readonly data: Record<string, unknown> }>
  ) => Effect.Effect<Array<Finding>, ModelError>
}

const ModelAnswer = Schema.Struct({
  suggestions: Schema.Array(
    Schema.Struct({
      recordId: Schema.String,
      field: Schema.String,
      suggestedValue: Schema.Json,
      reason: Schema.String
    })
  )
})

const BATCH = 20

export interface ModelSettings {
  readonly url: string | undefined
  readonly model: string
  readonly key: string | undefined
  readonly timeoutMs: number
  readonly tokenBudget: number
}

export const modelSettings = Effect.gen(function* () {
  const url = yield* Config.option(Config.String("TROUPE_AI_URL"))
  const model = yield* Config.withDefault(Config.String("TROUPE_AI_MODEL"), "gpt-4o-mini")
  const key = yield* Config.option(Config.String("TROUPE_AI_KEY"))
  const timeout = yield* Config.withDefault(Config.Number("TROUPE_AI_TIMEOUT_SECONDS"), 30)
  const budget = yield* Config.withDefault(Config.Number("TROUPE_AI_TOKEN_BUDGET"), 50_000)
  return {
    url: Option.getOrUndefined(url),
    model,
    key: Option.getOrUndefined(key),
    timeoutMs: Math.max(100, timeout * 1000),
    tokenBudget: budget
  } satisfies ModelSettings
}).pipe(Effect.orDie)

const endpointOf = (url: string) => (/\/chat\/completions\/?$/.test(url) ? url : `${url.replace(/\/+$/, "")}/chat/completions`)

const system =
  "You check database records against rules written by their owner. Answer only JSON: " +
  '{"suggestions":[{"recordId":"…","field":"…","suggestedValue":<corrected value>,"reason":"one sentence"}]}. ' +
  "Propose a correction only where a rule is broken; use only the given record ids and fields; an empty list is fine."

export const makeModelChecker = (settings: ModelSettings): ModelChecker => ({
  configured: settings.url !== undefined,
  check: (rules, fields, rows) =>
    Effect.gen(function* () {
      const url = settings.url
      if (url === undefined) return []
      const out: Array<Finding> = []
      let spent = 0
      for (let i = 0; i < rows.length && spent < settings.tokenBudget; i += BATCH) {
        const batch = rows.slice(i, i + BATCH).map((r) => ({
          recordId: r.id,
          data: Object.fromEntries(fields.filter((f) => f in r.data).map((f) => [f, r.data[f]]))
        }))
        const body = {
          model: settings.model,
          temperature: 0,
          response_format: { type: "json_object" },
          messages: [
            { role: "system", content: system },
            { role: "user", content: JSON.stringify({ rules, fields, records: batch }) }
          ]
        }
        const batchNo = i / BATCH + 1
        const response = yield* Effect.tryPromise({
          try: (signal) =>
            fetch(endpointOf(url), {
              method: "POST",
              headers: { "content-type": "application/json", ...(settings.key ? { authorization: `Bearer ${settings.key}` } : {}) },
              body: JSON.stringify(body),
              signal: AbortSignal.any([signal, AbortSignal.timeout(settings.timeoutMs)])
            }).then(async (res) => ({ status: res.status, text: await res.text() })),
          catch: (e) =>
            new ModelError({
              message:
                (e as Error)?.name === "TimeoutError"
                  ? `model batch ${batchNo}: no answer within ${settings.timeoutMs / 1000} s`
                  : `model batch ${batchNo}: the model could not be reached (${(e as Error)?.message ?? e})`
            })
        })
        if (response.status === 429) return yield* new ModelError({ message: `model batch ${batchNo}: rate limited by the model (429)` })
        if (response.status < 200 || response.status > 299) {
          return yield* new ModelError({ message: `model batch ${batchNo}: the model answered ${response.status}` })
        }
        const parsed = parse(response.text)
        const content = parsed?.choices?.[0]?.message?.content
        spent += typeof parsed?.usage?.total_tokens === "number" ? parsed.usage.total_tokens : Math.ceil(JSON.stringify(body).length / 4)
        const answer = typeof content === "string" ? parse(content) : undefined
        const decoded = Schema.decodeUnknownOption(ModelAnswer)(answer)
        if (Option.isNone(decoded)) {
          return yield* new ModelError({ message: `model batch ${batchNo}: the answer is not the expected JSON ({suggestions:[…]})` })
        }
        const ids = new Map(batch.map((r) => [r.recordId, r.data]))
        for (const s of decoded.value.suggestions) {
          const data = ids.get(s.recordId)
          if (data === undefined || !fields.includes(s.field) || JSON.stringify(data[s.field]) === JSON.stringify(s.suggestedValue))
            continue
          out.push({
            signature: `model:${s.recordId}:${s.field}:${JSON.stringify(data[s.field] ?? null)}`,
            recordId: s.recordId,
            field: s.field,
            currentValue: data[s.field] ?? null,
            suggestedValue: s.suggestedValue,
            reason: s.reason.slice(0, 500)
          })
        }
      }
      return out
    })
})

const parse = (text: string): any => {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}
