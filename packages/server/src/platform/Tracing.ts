// Traces: with OTEL_EXPORTER_OTLP_ENDPOINT set, every span (a server span per request named after its route, the
// `Effect.fn` spans of service methods, the HTTP client's) is exported over OTLP/HTTP (JSON) to
// `<endpoint>/v1/traces` by effect/observability's OtlpTracer, as service `troupe` (OTEL_SERVICE_NAME), one
// `service.instance.id` per node. Unset, the runtime keeps its native tracer: no span leaves the process and the
// HTTP server makes no request spans at all. Metrics are pulled from GET /metrics instead; logs stay JSON lines.
import { Effect, Layer, Option, Tracer } from "effect"
import { FetchHttpClient } from "effect/http"
import { OtlpSerialization, OtlpTracer } from "effect/observability"
import { AppConfig } from "./AppConfig.ts"
import { nodeName } from "./Cluster.ts"

export const TracingLayer = Layer.unwrap(
  Effect.gen(function* () {
    const config = yield* AppConfig
    if (Option.isNone(config.otlpEndpoint)) return Layer.empty
    return OtlpTracer.layer({
      url: `${config.otlpEndpoint.value}/v1/traces`,
      resource: {
        serviceName: config.otelServiceName,
        attributes: { "service.instance.id": nodeName(config) }
      },
      headers: config.otlpHeaders
    }).pipe(Layer.provide([OtlpSerialization.layerJson, FetchHttpClient.layer]))
  })
)

/**
 * Spans named `Service.method` around a service's methods, made only when spans are exported: a span (and the stack
 * capture of `Effect.fn`) costs a few µs per call even unexported, too much for the hottest paths (a record read in
 * the fast lane). Services off those paths use `Effect.fn("Service.method")` as usual.
 */
export const spanMethods = Effect.map(
  Effect.service(Tracer.Tracer),
  (tracer) =>
    <S extends Record<string, unknown>>(service: string, methods: S): S => {
      if (tracer === Tracer.nativeTracer) return methods
      const out: Record<string, unknown> = {}
      for (const [name, method] of Object.entries(methods)) {
        out[name] =
          typeof method !== "function"
            ? method
            : (...args: Array<unknown>) => {
                const result = method(...args)
                return Effect.isEffect(result) ? Effect.withSpan(result, `${service}.${name}`, { captureStackTrace: false }) : result
              }
      }
      return out as S
    }
)
