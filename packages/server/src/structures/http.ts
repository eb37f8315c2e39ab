// Structure routes: decode (by the group's schemas), call StructureService, encode. The `/collections` alias
// turns its `fields` map into properties and answers each structure with its `fields` map beside the properties.
import { Api } from "@troupe/api/Api"
import { CurrentPrincipal } from "@troupe/api/Authorization"
import type { Collection, CollectionInput, CollectionUpdate } from "@troupe/api/structures/StructuresApi"
import type { PropertyDefinition, Structure, StructureUpdate } from "@troupe/api/structures/Structure"
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { flag } from "../lib/rows.ts"
import { StructureService } from "./StructureService.ts"

type Fields = Readonly<Record<string, Readonly<Record<string, unknown>>>>

/** `{fields: {title: {type: "string", required: true}}}` -> properties; a name already stored keeps its id. */
const fieldsToProperties = (fields: Fields, existing: ReadonlyArray<PropertyDefinition> = []): Array<PropertyDefinition> =>
  Object.entries(fields).map(([name, def]) => {
    const stored = existing.find((p) => p.name === name)
    return { ...def, name, id: stored?.id ?? "new" } as unknown as PropertyDefinition
  })

/** A collection body as a create / update body. */
const fromCollection = (body: CollectionInput | CollectionUpdate, existing?: ReadonlyArray<PropertyDefinition>) => {
  const { fields, ...rest } = body
  return fields === undefined ? rest : { ...rest, properties: [...(body.properties ?? []), ...fieldsToProperties(fields, existing)] }
}

/** A structure with its simplified `fields` map (name -> the property without its name). */
export const toCollection = (s: Structure): Collection => ({
  ...s,
  fields: Object.fromEntries(
    s.properties.map((p) => {
      const { name, ...rest } = p
      return [name, rest as unknown as Collection["fields"][string]]
    })
  )
})

export const StructuresHandlers = HttpApiBuilder.group(
  Api,
  "structures",
  Effect.fn(function* (handlers) {
    const structures = yield* StructureService
    const principal = Effect.service(CurrentPrincipal)
    const update = (workspace: string, id: string, payload: StructureUpdate) =>
      Effect.flatMap(principal, (p) => structures.update(workspace, id, payload, p))
    return handlers
      .handle("list", ({ params, query }) => structures.list(params.workspace, query))
      .handle("create", ({ params, payload }) => Effect.flatMap(principal, (p) => structures.create(params.workspace, payload, p)))
      .handle("validate", ({ params, payload }) => structures.validate(params.workspace, payload))
      .handle("getBySlug", ({ params }) => structures.getBySlug(params.workspace, params.recordSlug))
      .handle("get", ({ params }) => structures.getAny(params.workspace, params.id))
      .handle("update", ({ params, payload }) => update(params.workspace, params.id, payload))
      .handle("patch", ({ params, payload }) => update(params.workspace, params.id, payload))
      .handle("delete", ({ params, query }) =>
        Effect.flatMap(principal, (p) => structures.remove(params.workspace, params.id, flag(query.hard), p))
      )
      .handle("deleteProperties", ({ params, payload }) =>
        Effect.flatMap(principal, (p) => structures.deleteProperties(params.workspace, params.id, payload.ids, p))
      )
      .handle("setMetadata", ({ params, payload }) =>
        Effect.flatMap(principal, (p) => structures.setMetadata(params.workspace, params.id, payload, p))
      )
      .handle("versions", ({ params }) => Effect.map(structures.versions(params.workspace, params.id), (versions) => ({ versions })))
      .handle("version", ({ params }) => structures.version(params.workspace, params.id, params.version))
      .handle("pinVersion", ({ params }) => structures.pinVersion(params.workspace, params.id, params.version, true))
      .handle("unpinVersion", ({ params }) => structures.pinVersion(params.workspace, params.id, params.version, false))
      .handle("listCollections", ({ params, query }) =>
        Effect.map(structures.list(params.workspace, query), (l) => ({ ...l, data: l.data.map(toCollection) }))
      )
      .handle("createCollection", ({ params, payload }) =>
        Effect.flatMap(principal, (p) =>
          Effect.map(structures.create(params.workspace, { properties: [], ...fromCollection(payload) }, p), toCollection)
        )
      )
      .handle("getCollection", ({ params }) => Effect.map(structures.resolve(params.workspace, params.id), toCollection))
      .handle("updateCollection", ({ params, payload }) =>
        Effect.flatMap(structures.resolve(params.workspace, params.id), (s) =>
          Effect.map(update(params.workspace, s.id, fromCollection(payload, s.properties) as StructureUpdate), toCollection)
        )
      )
      .handle("deleteCollection", ({ params, query }) =>
        Effect.flatMap(principal, (p) =>
          Effect.flatMap(structures.resolve(params.workspace, params.id), (s) =>
            Effect.map(structures.remove(params.workspace, s.id, flag(query.hard), p), toCollection)
          )
        )
      )
  })
)
