// AppConfig reads the environment through effect/Config: defaults, blanks as unset, durations in either spelling,
// secrets kept Redacted, and one InvalidConfig naming the variable for a bad value.
import { ConfigProvider, Effect, Option, Redacted } from "effect"
import { describe, expect, it } from "vitest"
import { AppConfig } from "./AppConfig.ts"

const load = (env: Record<string, string>) =>
  Effect.runPromise(
    Effect.gen(function* () {
      return yield* AppConfig
    }).pipe(
      Effect.provide(AppConfig.layer),
      Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromEnv({ env })),
      Effect.result
    )
  )

const ok = async (env: Record<string, string>) => {
  const result = await load(env)
  if (result._tag === "Failure") throw new Error(`expected a config, got ${String(result.failure)}`)
  return result.success
}

const failure = async (env: Record<string, string>) => {
  const result = await load(env)
  if (result._tag === "Success") throw new Error("expected InvalidConfig")
  return result.failure
}

describe("AppConfig", () => {
  it("defaults every variable; blank values count as unset", async () => {
    const config = await ok({ PORT: "", TROUPE_LOG_LEVEL: "" })
    expect(config.port).toBe(8080)
    expect(config.runnerPort).toBe(9080)
    expect(config.workspace).toBe("default")
    expect(config.logLevel).toBe("info")
    expect(config.minimumLogLevel).toBe("Info")
    expect(config.webhookRetryDelays).toEqual([1, 5, 15])
    expect(config.ttlSweepSeconds).toBe(5)
    expect(Option.isNone(config.databaseUrl)).toBe(true)
    expect(config.clustered).toBe(false)
  })

  it("reads numbers, lists, durations in seconds or as Effect durations, and secrets as Redacted", async () => {
    const config = await ok({
      PORT: "3000",
      DATABASE_URL: "postgres://u:pw@db/x",
      TROUPE_WEBHOOK_RETRY_DELAYS: "2, 4.5,8",
      TROUPE_TTL_SWEEP_SECONDS: "1.5",
      TROUPE_CLUSTER_REFRESH_SECONDS: "250 millis",
      TROUPE_LOG_LEVEL: "warn",
      TROUPE_ENCRYPTION_KEY: Buffer.alloc(32, 7).toString("base64"),
      OTEL_EXPORTER_OTLP_HEADERS: "Authorization=Bearer%20x, x-team = a",
      TROUPE_PUBLIC_URL: "https://troupe.example/"
    })
    expect(config.port).toBe(3000)
    expect(config.runnerPort).toBe(4000)
    expect(config.webhookRetryDelays).toEqual([2, 4.5, 8])
    expect(config.ttlSweepSeconds).toBe(1.5)
    expect(config.clusterRefreshSeconds).toBe(0.25)
    expect(config.minimumLogLevel).toBe("Warn")
    expect(config.clustered).toBe(true)
    const url = Option.getOrThrow(config.databaseUrl)
    expect(String(url)).not.toContain("pw")
    expect(Redacted.value(url)).toBe("postgres://u:pw@db/x")
    expect(Redacted.value(Option.getOrThrow(config.encryptionKey)).equals(Buffer.alloc(32, 7))).toBe(true)
    expect(config.otlpHeaders).toEqual({ authorization: "Bearer x", "x-team": "a" })
    expect(config.publicUrl).toBe("https://troupe.example")
  })

  it.each([
    ["PORT", "http"],
    ["PORT", "70000"],
    ["TROUPE_LIMIT_READS", "1.5"],
    ["TROUPE_FUNCTION_MEMORY_MB", "4"],
    ["DATABASE_URL", "mysql://x"],
    ["TROUPE_WORKSPACE", "Not A Slug"],
    ["TROUPE_ENCRYPTION_KEY", "c2hvcnQ="],
    ["TROUPE_LOG_LEVEL", "loud"],
    ["TROUPE_TTL_SWEEP_SECONDS", "0"],
    ["TROUPE_TTL_SWEEP_SECONDS", "soon"],
    ["TROUPE_WEBHOOK_RETRY_DELAYS", "1,,5"],
    ["TROUPE_PUBLIC_URL", "ftp://x"]
  ])("%s=%s fails the start with one line naming the variable", async (variable, value) => {
    const error = await failure({ [variable]: value })
    expect(error._tag).toBe("InvalidConfig")
    expect(error.message.startsWith(`invalid ${variable}: `)).toBe(true)
    expect(error.message).not.toContain("\n")
  })
})
