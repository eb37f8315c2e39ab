/**
 * Puts every endpoint's authorization needs into the OpenAPI document: `x-required-permission` and
 * `x-rate-class` on each operation, and a sentence in its description. Read from the same `RequiredPermission` /
 * `RateClass` annotations the server's Authorization middleware enforces, so the document cannot drift.
 *
 * @since 0.1.0
 */
import { Context } from "effect"
import { HttpApi } from "effect/http-api"
import { RateClass, RequiredPermission } from "../Authorization.ts"
import { RequiresUserToken } from "./Identity.ts"

/** Use as `OpenApi.annotations({ transform: documentPermissions(() => Api) })`. @category annotations */
export const documentPermissions =
  (api: () => HttpApi.Top) =>
  (spec: Record<string, any>): Record<string, any> => {
    const byOperation = new Map<string, { permission: string | undefined; rateClass: string | undefined; userOnly: boolean }>()
    HttpApi.reflect(api(), {
      onGroup: () => {},
      onEndpoint: ({ endpoint, group, mergedAnnotations }) => {
        const id = group.topLevel ? endpoint.identifier : `${group.identifier}.${endpoint.identifier}`
        byOperation.set(id, {
          permission: Context.get(mergedAnnotations, RequiredPermission),
          rateClass: Context.get(mergedAnnotations, RateClass),
          userOnly: Context.get(mergedAnnotations, RequiresUserToken)
        })
      }
    })
    for (const item of Object.values<Record<string, any>>(spec.paths ?? {})) {
      for (const op of Object.values<any>(item)) {
        if (op === null || typeof op !== "object" || typeof op.operationId !== "string") continue
        const info = byOperation.get(op.operationId)
        if (info === undefined || (op.security ?? []).length === 0) continue
        const needs =
          info.permission === undefined
            ? "Any valid token for the workspace."
            : info.permission === "platform:admin"
              ? "Requires a platform administrator."
              : `Requires permission \`${info.permission}\`.`
        op["x-required-permission"] = info.permission ?? null
        if (info.userOnly) op["x-user-token-only"] = true
        if (info.rateClass !== undefined) op["x-rate-class"] = info.rateClass
        const people = info.userOnly ? " Needs a user token (service-account tokens are refused)." : ""
        const limit = info.rateClass === undefined ? "" : ` Counts against the workspace's \`${info.rateClass}\` rate limit.`
        op.description = [op.description, needs + people + limit].filter((s) => typeof s === "string" && s.length > 0).join("\n\n")
      }
    }
    return spec
  }
