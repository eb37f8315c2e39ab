/**
 * @troupe/client-fetch: a plain TypeScript client for Troupe (no Effect), on openapi-fetch and EventSource, for Node
 * and browsers (no `node:` import anywhere; bundlers pick the browser's own EventSource through the `browser` field).
 *
 * @since 0.1.0
 */
export * from "./Progress.ts"
export * from "./Realtime.ts"
export * from "./Storage.ts"
export type { components, operations, paths } from "./schema.ts"
export * from "./TokenSource.ts"
export * from "./TroupeClient.ts"
