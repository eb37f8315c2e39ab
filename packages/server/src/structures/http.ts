// Structure routes: decode (by the group's schemas), call StructureService, encode. The `/collections` alias
// turns its `fields` map into properties.
import { Api } from "@troupe/api/Api"
import { CurrentPrincipal } from "@troupe/api/Authorization"
import type { PropertyDefinition, StructureInput, StructureUpdate } from "@troupe/api/structures/Structure"
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { flag } from "../lib/rows.ts"
import { StructureService } from "./StructureService.ts"

type Fields = Readonly<Record<string, Readonly<Record<string, unknown>>>>

/** `{fields: {title: {type: "string", required: true}}}` -> properties. */
const fieldsToProperties = (fields: Fields): Array<PropertyDefinition> =>
  Object.entries(fields).map(([name, def]) => ({ ...def, name }) as unknown as PropertyDefinition)

const collection = <B extends { fields?: Fields; properties?: ReadonlyArray<PropertyDefinition> }>(body: B) => {
  const { fields, ...rest } = body
  return fields === undefined
    ? rest
    : { ...rest, properties: [...(body.properties ?? []), ...fieldsToProperties(fields)] }
}

export const StructuresHandlers = HttpApiBuilder.group(Api, "structures", Effect.fn(function*(handlers) {
  const structures = yield* StructureService
  const principal = Effect.service(CurrentPrincipal)
  return handlers
    .handle("list", ({ params, query }) => structures.list(params.workspace, query))
    .handle("create", ({ params, payload }) => Effect.flatMap(principal, (p) => structures.create(params.workspace, payload, p)))
    .handle("validate", ({ params, payload }) => structures.validate(params.workspace, payload))
    .handle("getBySlug", ({ params }) => structures.getBySlug(params.workspace, params.recordSlug))
    .handle("get", ({ params }) => structures.get(params.workspace, params.id))
    .handle("update", ({ params, payload }) => Effect.flatMap(principal, (p) => structures.update(params.workspace, params.id, payload, p)))
    .handle("patch", ({ params, payload }) => Effect.flatMap(principal, (p) => structures.update(params.workspace, params.id, payload, p)))
    .handle("delete", ({ params, query }) => Effect.flatMap(principal, (p) => structures.remove(params.workspace, params.id, flag(query.hard), p)))
    .handle("deleteProperties", ({ params, payload }) => Effect.flatMap(principal, (p) => structures.deleteProperties(params.workspace, params.id, payload.ids, p)))
    .handle("versions", ({ params }) => Effect.map(structures.versions(params.workspace, params.id), (versions) => ({ versions })))
    .handle("version", ({ params }) => structures.version(params.workspace, params.id, params.version))
    .handle("listCollections", ({ params, query }) => structures.list(params.workspace, query))
    .handle("createCollection", ({ params, payload }) =>
      Effect.flatMap(principal, (p) => structures.create(params.workspace, { properties: [], ...collection(payload) } as StructureInput, p)))
    .handle("getCollection", ({ params }) => structures.resolve(params.workspace, params.id))
    .handle("updateCollection", ({ params, payload }) =>
      Effect.flatMap(principal, (p) =>
        Effect.flatMap(structures.resolve(params.workspace, params.id), (s) =>
          structures.update(params.workspace, s.id, collection(payload) as StructureUpdate, p))))
    .handle("deleteCollection", ({ params, query }) =>
      Effect.flatMap(principal, (p) =>
        Effect.flatMap(structures.resolve(params.workspace, params.id), (s) => structures.remove(params.workspace, s.id, flag(query.hard), p))))
}))
