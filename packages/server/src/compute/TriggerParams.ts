// Encrypted trigger params (README "Triggers"): a value written `{value, encrypt: true}` is stored AES-256-GCM
// encrypted and shown as `{value: <ciphertext>, encrypted: true, keyVersion: <n>}`; the plaintext never leaves the
// server except into the function that runs. `keyVersion` numbers the encryption keys in the order they were first
// used here (table encryption_key_versions), since the key ring itself names keys by a hash.
import type { BadRequest } from "@troupe/api/Errors"
import { Context, Effect, Layer, Predicate } from "effect"
import { SqlClient } from "effect/sql"
import { Secrets } from "../platform/Secrets.ts"
import { invalid } from "./model.ts"

/** The associated data every encrypted param of a workspace is bound to. */
const contextOf = (workspace: string) => `trigger-params:${workspace}`

const keyIdOf = (ciphertext: string) => ciphertext.split(":")[2] ?? ""

export class TriggerParams extends Context.Service<
  TriggerParams,
  {
    /** Params as a create or update sends them -> the stored form. `previous` is the stored form they replace. */
    readonly seal: (workspace: string, params: unknown, field: string) => Effect.Effect<unknown, BadRequest>
    /** The stored form -> plaintext, for the function's `triggerParams`. Fails with the field that cannot be read. */
    readonly open: (workspace: string, params: unknown) => Effect.Effect<unknown, string>
    /** Any JSON value encrypted for a run's stored parameters, and back. */
    readonly encryptValue: (value: unknown, context: string) => string
    readonly decryptValue: (ciphertext: string, context: string) => Effect.Effect<unknown, string>
  }
>()("@troupe/server/compute/TriggerParams") {
  static readonly layer = Layer.effect(
    TriggerParams,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const secrets = yield* Secrets
      // Number the current key once (two nodes racing: ON CONFLICT keeps the first number).
      yield* sql`INSERT INTO encryption_key_versions (key_id) VALUES (${secrets.currentKeyId}) ON CONFLICT (key_id) DO NOTHING`
      const versions = new Map<string, number>()
      const loadVersions = Effect.map(
        sql<{ keyId: string; version: number }>`SELECT key_id AS "keyId", version FROM encryption_key_versions`,
        (rows) => rows.forEach((r) => versions.set(r.keyId, Number(r.version)))
      )
      yield* loadVersions
      const versionOf = (keyId: string) => versions.get(keyId) ?? 1

      const seal = (workspace: string, params: unknown, field: string): Effect.Effect<unknown, BadRequest> =>
        Effect.gen(function* () {
          if (Array.isArray(params)) {
            const out: Array<unknown> = []
            for (let i = 0; i < params.length; i++) out.push(yield* seal(workspace, params[i], `${field}[${i}]`))
            return out
          }
          if (!Predicate.isObject(params)) return params
          if (params.encrypt === true && "value" in params) {
            const ciphertext = secrets.encrypt(JSON.stringify(params.value ?? null), contextOf(workspace))
            return { value: ciphertext, encrypted: true, keyVersion: versionOf(secrets.currentKeyId) }
          }
          if (params.encrypted === true && "value" in params) {
            // sent back as shown: kept only when it is a ciphertext this server can read
            const value = params.value
            if (typeof value !== "string" || !secrets.isEncrypted(value)) {
              return yield* invalid(field, "an encrypted param can only be sent back as shown; write {value, encrypt: true} to change it")
            }
            const readable = yield* Effect.result(secrets.decrypt(value, contextOf(workspace)))
            if (readable._tag === "Failure") return yield* invalid(field, "this encrypted value cannot be read by this workspace")
            return { value, encrypted: true, keyVersion: versionOf(keyIdOf(value)) }
          }
          const out: Record<string, unknown> = {}
          for (const [k, v] of Object.entries(params)) out[k] = yield* seal(workspace, v, `${field}.${k}`)
          return out
        })

      const open = (workspace: string, params: unknown): Effect.Effect<unknown, string> =>
        Effect.gen(function* () {
          if (Array.isArray(params)) return yield* Effect.forEach(params, (p) => open(workspace, p))
          if (!Predicate.isObject(params)) return params
          if (params.encrypted === true && typeof params.value === "string" && secrets.isEncrypted(params.value)) {
            const plain = yield* secrets
              .decrypt(params.value, contextOf(workspace))
              .pipe(Effect.mapError(() => "an encrypted trigger param cannot be decrypted (was the encryption key changed?)"))
            return JSON.parse(plain)
          }
          const out: Record<string, unknown> = {}
          for (const [k, v] of Object.entries(params)) out[k] = yield* open(workspace, v)
          return out
        })

      const encryptValue = (value: unknown, context: string) => secrets.encrypt(JSON.stringify(value ?? null), context)
      const decryptValue = (ciphertext: string, context: string) =>
        secrets.decrypt(ciphertext, context).pipe(
          Effect.map((plain) => JSON.parse(plain) as unknown),
          Effect.mapError((e) => e.message)
        )

      return TriggerParams.of({ seal, open, encryptValue, decryptValue })
    }).pipe(Effect.orDie)
  )
}
