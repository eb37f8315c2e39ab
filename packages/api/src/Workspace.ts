/**
 * Workspace-scoped routes share the base `/workspace/{workspace}/api/v1` (the server also answers under
 * `/data/workspace/{workspace}/api/v1`, rewritten at the edge).
 *
 * @since 0.1.0
 */
import { Schema } from "effect"

/** Lowercase, hyphen-separated. @category models */
export const WorkspaceSlug = Schema.String.pipe(
  Schema.check(Schema.isPattern(/^[a-z0-9]+(-[a-z0-9]+)*$/, { message: "workspace slug must be lowercase and hyphen-separated" }))
)

/** The base path every workspace group is prefixed with. */
export const workspaceBase = "/workspace/:workspace/api/v1" as const

/** Path params every workspace endpoint declares. */
export const WorkspaceParams = { workspace: Schema.String }
