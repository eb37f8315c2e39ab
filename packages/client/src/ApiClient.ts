/**
 * The typed Troupe client: `HttpApiClient` over the shared `@troupe/api` definition, so every call, payload and
 * error is the server's own type. The bearer token comes from a pluggable source (a fixed token, or
 * `TokenSource.clientCredentials` which caches and renews a service-account token).
 *
 * @since 0.1.0
 */
import { Api } from "@troupe/api/Api"
import { Authorization } from "@troupe/api/Authorization"
import { Context, Effect, Layer } from "effect"
import { FetchHttpClient, HttpClient, HttpClientRequest } from "effect/http"
import { HttpApiClient, HttpApiMiddleware } from "effect/http-api"

/** Where the bearer token comes from; asked before every request (cache inside it). @category models */
export type TokenProvider = Effect.Effect<string>

/** @category services */
export class ApiClient extends Context.Service<ApiClient, HttpApiClient.ForApi<typeof Api>>()("@troupe/client/ApiClient") {
  /** A client for `baseUrl` (e.g. http://localhost:8080) that sends the provider's token. @category layers */
  static readonly layer = (options: { readonly baseUrl: string; readonly token?: TokenProvider | string }) => {
    const token: TokenProvider | undefined = typeof options.token === "string" ? Effect.succeed(options.token) : options.token
    const AuthorizationClient = HttpApiMiddleware.layerClient(Authorization, ({ next, request }) =>
      token === undefined ? next(request) : Effect.flatMap(token, (t) => next(HttpClientRequest.bearerToken(request, t)))
    )
    return Layer.effect(
      ApiClient,
      HttpApiClient.make(Api, {
        transformClient: (client) => client.pipe(HttpClient.mapRequest(HttpClientRequest.prependUrl(options.baseUrl)))
      })
    ).pipe(Layer.provide(AuthorizationClient), Layer.provide(FetchHttpClient.layer))
  }
}
