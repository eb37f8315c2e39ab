// The identity domain wired: secrets at rest, signing keys, the access cache (after the first-boot bootstrap), rate
// limits, the authenticator, the Authorization middleware and the services behind the handlers.
import { Layer } from "effect"
import { Secrets } from "../platform/Secrets.ts"
import { AccessCache } from "./AccessCache.ts"
import { Authenticator } from "./Authenticate.ts"
import { AuthorizationLive } from "./AuthorizationLive.ts"
import { BootstrapLayer } from "./Bootstrap.ts"
import { GroupService } from "./GroupService.ts"
import { MemberService } from "./MemberService.ts"
import { RateLimiter } from "./RateLimiter.ts"
import { ServiceAccountService } from "./ServiceAccountService.ts"
import { SigningKeys } from "./SigningKeys.ts"
import { TokenService } from "./TokenService.ts"
import { WorkspaceService } from "./WorkspaceService.ts"

const Core = Layer.mergeAll(SigningKeys.layer, AccessCache.layer.pipe(Layer.provide(BootstrapLayer)), RateLimiter.layer).pipe(
  Layer.provideMerge(Secrets.layer)
)

const Auth = AuthorizationLive.pipe(Layer.provideMerge(Authenticator.layer), Layer.provideMerge(Core))

/**
 * Provides Secrets, SigningKeys, AccessCache, RateLimiter, Authenticator, Authorization (the HttpApi middleware)
 * and the identity services. Needs AppConfig and the SqlClient (after migrations).
 */
export const IdentityLayer = Layer.mergeAll(
  WorkspaceService.layer,
  MemberService.layer,
  ServiceAccountService.layer,
  GroupService.layer,
  TokenService.layer
).pipe(Layer.provideMerge(Auth))
