/**
 * The token service: `POST /oidc/token` (RFC 6749, form-encoded; `client_credentials` and `password` grants),
 * the public keys at `/oidc/jwks` and OpenID discovery. No bearer token needed here.
 *
 * @since 0.1.0
 */
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { Discovery, Jwks, TokenBadRequest, TokenRequest, TokenResponse, TokenSlowDown, TokenUnauthorized } from "./Identity.ts"

/** @category groups */
export class OidcApi extends HttpApiGroup.make("oidc")
  .add(
    HttpApiEndpoint.post("token", "/oidc/token", {
      payload: TokenRequest.pipe(HttpApiSchema.asFormUrlEncoded()),
      success: TokenResponse,
      error: [TokenBadRequest, TokenUnauthorized, TokenSlowDown]
    }).annotateMerge(
      OpenApi.annotations({
        description:
          "grant_type=client_credentials (client_id, client_secret; or HTTP Basic) or grant_type=password " +
          '(username, password, scope="openid workspace:<slug>"). Tokens last 25200 s; there is no refresh token.'
      })
    ),
    HttpApiEndpoint.get("jwks", "/oidc/jwks", { success: Jwks }),
    HttpApiEndpoint.get("discovery", "/.well-known/openid-configuration", { success: Discovery })
  )
  .annotateMerge(OpenApi.annotations({ title: "Tokens", description: "OAuth 2.0 token endpoint, JWKS and discovery." })) {}
