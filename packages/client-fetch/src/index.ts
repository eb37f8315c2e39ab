/**
 * @troupe/client-fetch: a plain TypeScript client for Troupe (no Effect), on openapi-fetch and eventsource.
 *
 * @since 0.1.0
 */
export * from "./Realtime.ts"
export type { components, operations, paths } from "./schema.ts"
export * from "./TokenSource.ts"
export * from "./TroupeClient.ts"
