// Every environment variable of CONTRACT.md §1, read once through effect/Config and validated at start.
// A bad value fails the start with InvalidConfig, which main prints as one line naming the variable.
import { Config, Context, Data, Effect, Layer, Option } from "effect"
import * as Os from "node:os"

export class InvalidConfig extends Data.TaggedError("InvalidConfig")<{ readonly variable: string; readonly reason: string }> {
  override get message() {
    return `invalid ${this.variable}: ${this.reason}`
  }
}

const raw = (name: string) =>
  Config.String(name).pipe(Config.option, Effect.map(Option.filter((s) => s.trim().length > 0)), Effect.orDie)

const parsed = <A>(name: string, fallback: A, parse: (s: string) => A | undefined, expected: string) =>
  Effect.flatMap(raw(name), (value) => {
    if (Option.isNone(value)) return Effect.succeed(fallback)
    const result = parse(value.value.trim())
    return result === undefined
      ? Effect.fail(new InvalidConfig({ variable: name, reason: `${expected}, got "${value.value}"` }))
      : Effect.succeed(result)
  })

const int = (name: string, fallback: number, min = 0, max = Number.MAX_SAFE_INTEGER) =>
  parsed(name, fallback, (s) => {
    const n = Number(s)
    return /^\d+$/.test(s) && n >= min && n <= max ? n : undefined
  }, `expected a whole number between ${min} and ${max}`)

const seconds = (name: string, fallback: number) =>
  parsed(name, fallback, (s) => {
    const n = Number(s)
    return /^\d+(\.\d+)?$/.test(s) && n > 0 ? n : undefined
  }, "expected a positive number of seconds")

const text = (name: string, fallback: string) => parsed(name, fallback, (s) => s, "expected text")

const config = Effect.gen(function*() {
  const port = yield* int("PORT", 8080, 0, 65535)
  const host = yield* text("HOST", "127.0.0.1")
  const databaseUrl = yield* parsed("DATABASE_URL", Option.none<string>(), (s) =>
    /^postgres(ql)?:\/\//.test(s) ? Option.some(s) : undefined, "expected a postgres:// URL")
  const dataDir = yield* text("TROUPE_DATA_DIR", "./.troupe")
  const workspace = yield* parsed("TROUPE_WORKSPACE", "default", (s) =>
    /^[a-z0-9]+(-[a-z0-9]+)*$/.test(s) ? s : undefined, "expected a lowercase hyphen-separated slug")
  const adminPassword = yield* raw("TROUPE_ADMIN_PASSWORD")
  const configuredPublicUrl = yield* parsed("TROUPE_PUBLIC_URL", Option.none<string>(), (s) =>
    /^https?:\/\/[^\s]+$/.test(s) ? Option.some(s.replace(/\/+$/, "")) : undefined, "expected an http(s) URL")
  const publicUrl = Option.getOrElse(configuredPublicUrl, () => `http://localhost:${port}`)
  const runnerHost = yield* raw("TROUPE_RUNNER_HOST")
  const runnerPort = yield* int("TROUPE_RUNNER_PORT", port + 1000, 1, 65535)
  const limits = {
    reads: yield* int("TROUPE_LIMIT_READS", 5000),
    writes: yield* int("TROUPE_LIMIT_WRITES", 1000),
    bulk: yield* int("TROUPE_LIMIT_BULK", 100),
    functions: yield* int("TROUPE_LIMIT_FUNCTIONS", 500),
    queries: yield* int("TROUPE_LIMIT_QUERIES", 500)
  }
  const webhookRetryDelays = yield* parsed("TROUPE_WEBHOOK_RETRY_DELAYS", [1, 5, 15], (s) => {
    const parts = s.split(",").map((x) => x.trim())
    return parts.every((p) => /^\d+(\.\d+)?$/.test(p)) ? parts.map(Number) : undefined
  }, "expected comma-separated seconds such as 1,5,15")
  const functionTimeoutMs = yield* int("TROUPE_FUNCTION_TIMEOUT_MS", 30000, 1)
  const functionMemoryMb = yield* int("TROUPE_FUNCTION_MEMORY_MB", 128, 8, 4096)
  // Functions mostly wait on `api` calls and HTTP: several runs per core keep the cores busy.
  const functionConcurrency = yield* int("TROUPE_FUNCTION_CONCURRENCY", Math.max(8, 4 * Os.availableParallelism()), 1, 1024)
  // the isolates of one node together: room for every slot twice over (warm isolates of several workspaces)
  const functionNodeMemoryMb = yield* int("TROUPE_FUNCTION_NODE_MEMORY_MB", Math.max(512, functionConcurrency * functionMemoryMb * 2), 8)
  const functionHttpAllowlist = yield* parsed("TROUPE_FUNCTION_HTTP_ALLOWLIST", [] as Array<string>, (s) =>
    s.split(",").map((x) => x.trim().toLowerCase()).filter((x) => x.length > 0), "expected host names")
  const nodeEnv = yield* text("NODE_ENV", "development")
  const encryptionKey = yield* parsed("TROUPE_ENCRYPTION_KEY", Option.none<Buffer>(), (s) => {
    const key = Buffer.from(s, "base64")
    return key.length === 32 ? Option.some(key) : undefined
  }, "expected 32 bytes, base64-encoded")
  const maxBodyBytes = yield* int("TROUPE_MAX_BODY_BYTES", 10 * 1024 * 1024, 1024)
  // Tuning knobs of single domains (README, Configuration).
  const tuning = {
    limitWindowSeconds: yield* int("TROUPE_LIMIT_WINDOW_SECONDS", 60, 1),
    ttlSweepSeconds: yield* seconds("TROUPE_TTL_SWEEP_SECONDS", 5),
    ttlSweepBatch: yield* int("TROUPE_TTL_SWEEP_BATCH", 500, 1),
    structureRetentionTickSeconds: yield* seconds("TROUPE_STRUCTURE_RETENTION_TICK_SECONDS", 300),
    queryTimeoutMs: yield* int("TROUPE_QUERY_TIMEOUT_MS", 30000),
    queryPoolSize: yield* int("TROUPE_QUERY_POOL_SIZE", 16, 1),
    maxResidentEntities: yield* int("TROUPE_MAX_ENTITIES", 50_000, 10),
    /** deepest nesting of arrays and objects in a JSON request body (400 beyond), checked before any decoding */
    maxJsonDepth: yield* int("TROUPE_MAX_JSON_DEPTH", 64, 1, 1024),
    sseHeartbeatSeconds: yield* seconds("TROUPE_SSE_HEARTBEAT_SECONDS", 15),
    /** open SSE connections per workspace on one node (429 beyond) */
    sseMaxConnections: yield* int("TROUPE_SSE_MAX_CONNECTIONS", 1000, 1),
    /** webhook requests in flight at once (the dispatcher runs on one node), and at most this many per workspace */
    webhookConcurrency: yield* int("TROUPE_WEBHOOK_CONCURRENCY", 128, 1),
    trustProxyHops: yield* int("TROUPE_TRUST_PROXY_HOPS", 0, 0, 10),
    webhookWorkspaceConcurrency: yield* int("TROUPE_WEBHOOK_WORKSPACE_CONCURRENCY", 16, 1),
    /** webhooks one workspace may hold (409 beyond) */
    webhooksPerWorkspace: yield* int("TROUPE_WEBHOOKS_PER_WORKSPACE", 100, 1),
    functionLeaseMs: Math.round((yield* seconds("TROUPE_FUNCTION_LEASE_SECONDS", 10)) * 1000),
    clusterLockExpirationSeconds: yield* seconds("TROUPE_CLUSTER_LOCK_EXPIRATION_SECONDS", 5),
    clusterHealthCheckSeconds: yield* seconds("TROUPE_CLUSTER_HEALTH_CHECK_SECONDS", 1),
    clusterRefreshSeconds: yield* seconds("TROUPE_CLUSTER_REFRESH_SECONDS", 1)
  }
  const logLevel = yield* parsed("TROUPE_LOG_LEVEL", "info", (s) =>
    ["debug", "info", "warn", "error", "none"].includes(s) ? s : undefined, "expected debug, info, warn, error or none")
  // Observability (README, "What to watch on /metrics"): the scrape token, and OTLP trace export.
  /** when set, GET /metrics answers only `Authorization: Bearer <this>` */
  const metricsToken = Option.map(yield* raw("TROUPE_METRICS_TOKEN"), (s) => s.trim())
  /** OTLP/HTTP base URL: spans go to `<this>/v1/traces`; unset, no spans leave the node */
  const otlpEndpoint = yield* parsed("OTEL_EXPORTER_OTLP_ENDPOINT", Option.none<string>(), (s) =>
    /^https?:\/\/[^\s]+$/.test(s) ? Option.some(s.replace(/\/+$/, "")) : undefined, "expected an http(s) URL")
  const otlpHeaders = yield* parsed("OTEL_EXPORTER_OTLP_HEADERS", {} as Record<string, string>, (s) => {
    const headers: Record<string, string> = {}
    for (const pair of s.split(",")) {
      const at = pair.indexOf("=")
      const key = at < 0 ? "" : pair.slice(0, at).trim()
      if (!/^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/.test(key)) return undefined
      try {
        headers[key.toLowerCase()] = decodeURIComponent(pair.slice(at + 1).trim())
      } catch {
        return undefined
      }
    }
    return headers
  }, "expected comma-separated key=value pairs")
  const otelServiceName = yield* text("OTEL_SERVICE_NAME", "troupe")
  return {
    port,
    host,
    databaseUrl,
    dataDir,
    workspace,
    adminPassword,
    /** TROUPE_PUBLIC_URL, or this node's default; the issuer actually used comes from SigningKeys */
    publicUrl,
    /** set: the operator chose the public URL (else the cluster keeps the first node's in the database) */
    configuredPublicUrl,
    runnerHost: Option.getOrElse(runnerHost, () => host),
    runnerPort,
    /** Every node on the same PostgreSQL joins one cluster (CONTRACT.md §1); PGlite is one process, one runner. */
    clustered: Option.isSome(databaseUrl),
    limits,
    webhookRetryDelays,
    functionTimeoutMs,
    functionMemoryMb,
    functionConcurrency,
    functionNodeMemoryMb,
    functionHttpAllowlist,
    production: nodeEnv === "production",
    encryptionKey,
    maxBodyBytes,
    logLevel,
    metricsToken,
    otlpEndpoint,
    otlpHeaders,
    otelServiceName,
    ...tuning
  } as const
})

export type AppConfigShape = Effect.Success<typeof config>

export class AppConfig extends Context.Service<AppConfig, AppConfigShape>()("@troupe/server/platform/AppConfig") {
  static readonly layer = Layer.effect(AppConfig, config)
  /** The environment's config with some values replaced (tests). */
  static readonly layerWith = (overrides: Partial<AppConfigShape>) =>
    Layer.effect(AppConfig, Effect.map(config, (c) => ({ ...c, ...overrides })))
}
