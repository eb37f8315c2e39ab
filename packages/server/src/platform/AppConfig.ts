// Every environment variable the node reads (README "Configuration"), read once through effect/Config and validated
// at start. A bad value fails the start with InvalidConfig, which main prints as one line naming the variable; a blank
// value counts as unset. Secrets (DATABASE_URL, keys, passwords, the metrics token) stay Redacted until used.
import { Config, Context, Data, Duration, Effect, Layer, type LogLevel, Option, Redacted, Schema } from "effect"
import * as Os from "node:os"
import { parseNodeOrigins } from "./Cors.ts"

export class InvalidConfig extends Data.TaggedError("InvalidConfig")<{ readonly variable: string; readonly reason: string }> {
  override get message() {
    return `invalid ${this.variable}: ${this.reason}`
  }
}

/** The first line of a ConfigError's schema message ("Expected a value between 1 and 65535"). */
const reasonOf = (error: Config.ConfigError) => {
  const text = (error.cause as { message?: string } | undefined)?.message ?? String(error)
  return text.split("\n")[0]!
}

/** `config` read as `name`; missing or blank -> `fallback`; anything else that does not decode -> InvalidConfig. */
const read = <A>(name: string, config: Config.Config<A>, fallback: A) =>
  Config.withDefault(config, fallback).pipe(
    Effect.catchTag("ConfigError", (error) =>
      Effect.flatMap(
        Effect.orElseSucceed(Config.String(name), () => ""),
        (raw) => Effect.fail(new InvalidConfig({ variable: name, reason: `${reasonOf(error)}, got "${raw}"` }))
      )
    )
  )

const optional = <A>(name: string, config: Config.Config<A>) => read(name, Config.option(config), Option.none())

const int = (name: string, fallback: number, min = 0, max = Number.MAX_SAFE_INTEGER) =>
  read(name, Config.schema(Schema.Int.check(Schema.isBetween({ minimum: min, maximum: max })), name), fallback)

/** A positive number of seconds, written as a number ("1.5") or as an Effect duration ("1500 millis", "2 seconds"). */
const seconds = (name: string, fallback: number) =>
  read(
    name,
    Config.orElse(Config.Duration(name), () => Config.map(Config.schema(Schema.Finite, name), (s) => Duration.seconds(s))),
    Duration.seconds(fallback)
  ).pipe(
    Effect.flatMap((d) =>
      Duration.isGreaterThan(d, Duration.zero)
        ? Effect.succeed(Duration.toSeconds(d))
        : Effect.fail(new InvalidConfig({ variable: name, reason: `Expected a positive duration, got "${Duration.format(d)}"` }))
    )
  )

/** A string matching `pattern` (described as `expected` when it does not). */
const matching = (name: string, pattern: RegExp, expected: string) =>
  Config.schema(Schema.String.check(Schema.isPattern(pattern, { message: expected })), name)

const httpUrl = (name: string) => Config.map(matching(name, /^https?:\/\/[^\s]+$/, "Expected an http(s) URL"), (s) => s.replace(/\/+$/, ""))

const text = (name: string, fallback: string) => read(name, Config.String(name), fallback)

/** Lowercase levels of TROUPE_LOG_LEVEL -> Effect's minimum log level. */
/** `key=value` pairs, values percent-decoded (a value that does not decode is kept as written). */
const otlpHeaderPairs = (s: string) => {
  const headers: Record<string, string> = {}
  for (const pair of s.split(",")) {
    const at = pair.indexOf("=")
    const value = pair.slice(at + 1).trim()
    let decoded = value
    try {
      decoded = decodeURIComponent(value)
    } catch {
      // kept as written
    }
    headers[pair.slice(0, at).trim().toLowerCase()] = decoded
  }
  return headers
}

const logLevels = { debug: "Debug", info: "Info", warn: "Warn", error: "Error", none: "None" } as const satisfies Record<
  string,
  LogLevel.LogLevel
>

const config = Effect.gen(function* () {
  const port = yield* int("PORT", 8080, 0, 65535)
  const host = yield* text("HOST", "127.0.0.1")
  const databaseUrl = yield* optional(
    "DATABASE_URL",
    Config.map(matching("DATABASE_URL", /^postgres(ql)?:\/\//, "Expected a postgres:// URL"), Redacted.make)
  )
  const dataDir = yield* text("TROUPE_DATA_DIR", "./.troupe")
  const workspace = yield* read(
    "TROUPE_WORKSPACE",
    matching("TROUPE_WORKSPACE", /^[a-z0-9]+(-[a-z0-9]+)*$/, "Expected a lowercase hyphen-separated slug"),
    "default"
  )
  const adminPassword = yield* optional("TROUPE_ADMIN_PASSWORD", Config.Redacted("TROUPE_ADMIN_PASSWORD"))
  const configuredPublicUrl = yield* optional("TROUPE_PUBLIC_URL", httpUrl("TROUPE_PUBLIC_URL"))
  const publicUrl = Option.getOrElse(configuredPublicUrl, () => `http://localhost:${port}`)
  const runnerHost = yield* optional("TROUPE_RUNNER_HOST", Config.String("TROUPE_RUNNER_HOST"))
  const runnerPort = yield* read("TROUPE_RUNNER_PORT", Config.Port("TROUPE_RUNNER_PORT"), port + 1000)
  const limits = {
    reads: yield* int("TROUPE_LIMIT_READS", 5000),
    writes: yield* int("TROUPE_LIMIT_WRITES", 1000),
    bulk: yield* int("TROUPE_LIMIT_BULK", 100),
    functions: yield* int("TROUPE_LIMIT_FUNCTIONS", 500),
    queries: yield* int("TROUPE_LIMIT_QUERIES", 500),
    notifications: yield* int("TROUPE_LIMIT_NOTIFICATIONS", 600)
  }
  const webhookRetryDelays = yield* read(
    "TROUPE_WEBHOOK_RETRY_DELAYS",
    Config.map(
      matching(
        "TROUPE_WEBHOOK_RETRY_DELAYS",
        /^\s*\d+(\.\d+)?\s*(,\s*\d+(\.\d+)?\s*)*$/,
        "Expected comma-separated seconds such as 1,5,15"
      ),
      (s) => s.split(",").map((x) => Number(x.trim()))
    ),
    [1, 5, 15]
  )
  const functionTimeoutMs = yield* int("TROUPE_FUNCTION_TIMEOUT_MS", 30000, 1)
  const functionMemoryMb = yield* int("TROUPE_FUNCTION_MEMORY_MB", 128, 8, 4096)
  // Functions mostly wait on `api` calls and HTTP: several runs per core keep the cores busy.
  const functionConcurrency = yield* int("TROUPE_FUNCTION_CONCURRENCY", Math.max(8, 4 * Os.availableParallelism()), 1, 1024)
  // the isolates of one node together: room for every slot twice over (warm isolates of several workspaces)
  const functionNodeMemoryMb = yield* int("TROUPE_FUNCTION_NODE_MEMORY_MB", Math.max(512, functionConcurrency * functionMemoryMb * 2), 8)
  const functionHttpAllowlist = yield* read(
    "TROUPE_FUNCTION_HTTP_ALLOWLIST",
    Config.map(Config.String("TROUPE_FUNCTION_HTTP_ALLOWLIST"), (s) =>
      s
        .split(",")
        .map((x) => x.trim().toLowerCase())
        .filter((x) => x.length > 0)
    ),
    [] as Array<string>
  )
  const nodeEnv = yield* text("NODE_ENV", "development")
  const encryptionKey = yield* optional(
    "TROUPE_ENCRYPTION_KEY",
    Config.map(matching("TROUPE_ENCRYPTION_KEY", /^[A-Za-z0-9+/_-]{43}=?$/, "Expected 32 bytes, base64-encoded"), (s) =>
      Redacted.make(Buffer.from(s, "base64"))
    )
  )
  const maxBodyBytes = yield* int("TROUPE_MAX_BODY_BYTES", 10 * 1024 * 1024, 1024)
  // Storage (docs/storage.md): where the bytes live, the per-file limit and the workspace quota.
  const storage = {
    /** s3://bucket[/prefix]; unset: disk under TROUPE_DATA_DIR (embedded) or the database (PostgreSQL) */
    url: yield* optional(
      "TROUPE_STORAGE",
      matching("TROUPE_STORAGE", /^s3:\/\/[a-z0-9][a-z0-9.-]{1,62}(\/\S*)?$/, "Expected s3://bucket[/prefix]")
    ),
    s3Endpoint: yield* optional("TROUPE_S3_ENDPOINT", matching("TROUPE_S3_ENDPOINT", /^https?:\/\/\S+$/, "Expected an http(s) URL")),
    s3Region: yield* text("TROUPE_S3_REGION", "us-east-1"),
    maxFileBytes: yield* int("TROUPE_STORAGE_MAX_FILE_BYTES", 100 * 1024 * 1024, 1),
    /** 0 = no quota */
    quotaBytes: yield* int("TROUPE_STORAGE_QUOTA_BYTES", 0, 0),
    /** how often the disk and PostgreSQL stores sweep bytes no file or variant row names (older than an hour) */
    sweepSeconds: yield* int("TROUPE_STORAGE_SWEEP_SECONDS", 3600, 1),
    /** the widths and heights image variants may be asked for (GET /files/{id}?width=&height=) */
    imageSizes: yield* read(
      "TROUPE_STORAGE_IMAGE_SIZES",
      Config.map(
        matching(
          "TROUPE_STORAGE_IMAGE_SIZES",
          /^\s*[1-9]\d{0,3}\s*(,\s*[1-9]\d{0,3}\s*)*$/,
          "Expected comma-separated pixels (1-9999) such as 64,128,256"
        ),
        (s) => [...new Set(s.split(",").map((x) => Number(x.trim())))].sort((a, b) => a - b)
      ),
      [64, 128, 256, 512, 1024, 2048]
    )
  }
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
  // Notifications (docs/notifications.md): the node's providers, used by workspaces that configured none, and the
  // outbox worker's knobs.
  const notification = {
    /** smtp(s)://user:password@host:port; unset with no workspace settings: email is captured */
    smtpUrl: yield* optional(
      "TROUPE_SMTP_URL",
      Config.map(matching("TROUPE_SMTP_URL", /^smtps?:\/\/\S+$/, "Expected an smtp:// or smtps:// URL"), Redacted.make)
    ),
    smtpFrom: yield* optional("TROUPE_SMTP_FROM", Config.String("TROUPE_SMTP_FROM")),
    /** http(s)://accountSid:authToken@provider/…/Messages.json; unset with no workspace settings: SMS is captured */
    smsUrl: yield* optional(
      "TROUPE_SMS_URL",
      Config.map(matching("TROUPE_SMS_URL", /^https?:\/\/\S+$/, "Expected an http(s) URL"), Redacted.make)
    ),
    smsFrom: yield* optional("TROUPE_SMS_FROM", Config.String("TROUPE_SMS_FROM")),
    /** messages one node sends at once, and at most this many of one workspace */
    concurrency: yield* int("TROUPE_NOTIFY_CONCURRENCY", 32, 1, 1024),
    workspaceConcurrency: yield* int("TROUPE_NOTIFY_WORKSPACE_CONCURRENCY", 8, 1, 1024),
    /** one attempt (connect, greeting, each SMTP command, an HTTP exchange) gives up after this */
    timeoutMs: Math.round((yield* seconds("TROUPE_NOTIFY_TIMEOUT_SECONDS", 30)) * 1000),
    /** a message being sent is leased for this long (renewed); a dead node's messages are taken over after it */
    leaseMs: Math.round((yield* seconds("TROUPE_NOTIFY_LEASE_SECONDS", 15)) * 1000)
  }
  const logLevel = yield* read("TROUPE_LOG_LEVEL", Config.Literals(["debug", "info", "warn", "error", "none"], "TROUPE_LOG_LEVEL"), "info")
  // Observability (README, "What to watch on /metrics"): the scrape token, and OTLP trace export.
  /** when set, GET /metrics answers only `Authorization: Bearer <this>` */
  const metricsToken = yield* optional("TROUPE_METRICS_TOKEN", Config.Redacted("TROUPE_METRICS_TOKEN"))
  /** OTLP/HTTP base URL: spans go to `<this>/v1/traces`; unset, no spans leave the node */
  const otlpEndpoint = yield* optional("OTEL_EXPORTER_OTLP_ENDPOINT", httpUrl("OTEL_EXPORTER_OTLP_ENDPOINT"))
  const otlpHeaders = yield* read(
    "OTEL_EXPORTER_OTLP_HEADERS",
    Config.map(
      matching(
        "OTEL_EXPORTER_OTLP_HEADERS",
        /^\s*[A-Za-z0-9!#$%&'*+.^_`|~-]+\s*=[^,]*(,\s*[A-Za-z0-9!#$%&'*+.^_`|~-]+\s*=[^,]*)*$/,
        "Expected comma-separated key=value pairs"
      ),
      otlpHeaderPairs
    ),
    {} as Record<string, string>
  )
  const otelServiceName = yield* text("OTEL_SERVICE_NAME", "troupe")
  // Browser apps (docs/browser.md): origins allowed on every route of the node, or `*`; none by default.
  const corsOrigins = yield* Effect.flatMap(text("TROUPE_CORS_ORIGINS", ""), (raw) => {
    const parsed = parseNodeOrigins(raw)
    return typeof parsed === "string"
      ? Effect.fail(new InvalidConfig({ variable: "TROUPE_CORS_ORIGINS", reason: parsed }))
      : Effect.succeed(parsed)
  })
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
    /** Every node on the same PostgreSQL joins one cluster; PGlite is one process, one runner. */
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
    /** Effect's minimum log level for TROUPE_LOG_LEVEL */
    minimumLogLevel: logLevels[logLevel],
    metricsToken,
    otlpEndpoint,
    otlpHeaders,
    otelServiceName,
    corsOrigins,
    notification,
    storage,
    ...tuning
  } as const
})

export type AppConfigShape = Effect.Success<typeof config>

export class AppConfig extends Context.Service<AppConfig, AppConfigShape>()("@troupe/server/platform/AppConfig") {
  static readonly layer = Layer.effect(AppConfig, config)
  /** The environment's config with some values replaced (tests). */
  static readonly layerWith = (overrides: Partial<AppConfigShape>) =>
    Layer.effect(
      AppConfig,
      Effect.map(config, (c) => ({ ...c, ...overrides }))
    )
}
