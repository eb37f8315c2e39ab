// Templates of a workspace (CONTRACT §8.3): Liquid sources per channel, parsed when saved (a syntax error is a 400
// naming the part), their top-level `variables` extracted from the source, every save a new version (all kept,
// `GET /templates/{id}/versions`), names unique per workspace (409). A template is addressed by id or by name.
// Parsed templates are cached per (id, version), so a send renders without parsing.
import type { Principal } from "@troupe/api/Authorization"
import { type BadRequest, type Conflict, conflict, type NotFound, notFound } from "@troupe/api/Errors"
import type { DraftPreviewRequest, Template, TemplateInput, TemplateVersion } from "@troupe/api/notification/Notification"
import { Context, Effect, Layer } from "effect"
import { isSqlError } from "effect/sql/SqlError"
import { uuidv7 } from "../lib/Uuid.ts"
import { type TemplateRow, toTemplate, toTemplateVersion } from "./model.ts"
import { NotificationRepo, type TemplateFields } from "./NotificationRepo.ts"
import { invalid } from "./Problems.ts"
import { type Compiled, compile, type Parts, render, withText } from "./Templates.ts"

/** Most bytes of one part of a template. */
const MAX_SOURCE_BYTES = 256 * 1024
/** Parsed templates kept per node. */
const CACHE_SIZE = 500

export interface ResolvedTemplate {
  readonly row: TemplateRow
  readonly compiled: Compiled
}

export class TemplateService extends Context.Service<
  TemplateService,
  {
    readonly create: (workspace: string, input: TemplateInput, by: Principal) => Effect.Effect<Template, BadRequest | Conflict>
    readonly update: (
      workspace: string,
      id: string,
      input: TemplateInput,
      by: Principal
    ) => Effect.Effect<Template, BadRequest | NotFound | Conflict>
    readonly remove: (workspace: string, id: string) => Effect.Effect<void, NotFound>
    readonly get: (workspace: string, id: string) => Effect.Effect<Template, NotFound>
    readonly list: (
      workspace: string,
      page: number,
      limit: number
    ) => Effect.Effect<{ data: ReadonlyArray<Template>; total: number; page: number; limit: number }>
    readonly versions: (workspace: string, id: string) => Effect.Effect<{ versions: ReadonlyArray<TemplateVersion> }, NotFound>
    readonly preview: (
      workspace: string,
      id: string,
      variables: Readonly<Record<string, unknown>>
    ) => Effect.Effect<Parts, BadRequest | NotFound>
    /** Unsaved sources, checked and rendered as a save and a send would. */
    readonly previewDraft: (input: DraftPreviewRequest) => Effect.Effect<Parts, BadRequest>
    /** A template by id or name, parsed: undefined when the workspace has none by that name. */
    readonly resolve: (workspace: string, idOrName: string) => Effect.Effect<ResolvedTemplate | undefined>
  }
>()("@troupe/server/notification/TemplateService") {
  static readonly layer = Layer.effect(
    TemplateService,
    Effect.gen(function* () {
      const repo = yield* NotificationRepo
      const cache = new Map<string, Compiled>()

      const compiledOf = (row: TemplateRow) =>
        Effect.suspend(() => {
          const key = `${row.id}/${row.version}`
          const hit = cache.get(key)
          if (hit !== undefined) return Effect.succeed(hit)
          // stored sources parsed when saved; a failure here is a defect (a liquidjs upgrade that refuses them)
          return Effect.orDie(compile({ subject: row.subject, text: row.text_body, html: row.html_body })).pipe(
            Effect.tap((compiled) =>
              Effect.sync(() => {
                if (cache.size >= CACHE_SIZE) cache.delete(cache.keys().next().value!)
                cache.set(key, compiled)
              })
            )
          )
        })

      const templateNotFound = (id: string) => notFound(`Template not found: ${id}`)

      const found = (workspace: string, id: string) =>
        Effect.flatMap(Effect.orDie(repo.findTemplate(workspace, id)), (row) =>
          row === undefined ? Effect.fail(templateNotFound(id)) : Effect.succeed(row)
        )

      /** Checks the parts for the channel and parses them. */
      const fieldsOf = (input: TemplateInput) =>
        Effect.gen(function* () {
          const parts: Parts = { subject: input.subject ?? null, text: input.text ?? null, html: input.html ?? null }
          for (const field of ["subject", "text", "html"] as const) {
            const source = parts[field]
            if (source !== null && Buffer.byteLength(source, "utf8") > MAX_SOURCE_BYTES) {
              return yield* invalid(field, `${field} must be at most ${MAX_SOURCE_BYTES / 1024} KB`)
            }
          }
          if (input.channel === "sms") {
            if (parts.html !== null) return yield* invalid("html", "an SMS template has no html: give text")
            if (parts.subject !== null) return yield* invalid("subject", "an SMS template has no subject")
            if (parts.text === null || parts.text.trim() === "") return yield* invalid("text", "an SMS template needs text")
          } else if ((parts.text ?? "").trim() === "" && (parts.html ?? "").trim() === "") {
            return yield* invalid("text", "an email template needs text or html")
          }
          const compiled = yield* compile(parts)
          const fields: TemplateFields = { name: input.name, channel: input.channel, ...parts, variables: compiled.variables }
          return fields
        })

      const nameTaken = (name: string) => conflict({ message: `A template named "${name}" already exists in this workspace` })
      const onUnique = (name: string) => (e: unknown) =>
        isSqlError(e) && e.reason._tag === "UniqueViolation" ? Effect.fail(nameTaken(name)) : Effect.die(e)

      const create = (workspace: string, input: TemplateInput, by: Principal) =>
        Effect.gen(function* () {
          const fields = yield* fieldsOf(input)
          const row = yield* repo.insertTemplate(workspace, uuidv7(), fields, by.id).pipe(Effect.catch(onUnique(input.name)))
          return toTemplate(row)
        })

      const update = (workspace: string, id: string, input: TemplateInput, by: Principal) =>
        Effect.gen(function* () {
          const current = yield* found(workspace, id)
          if (current.channel !== input.channel) return yield* invalid("channel", `a template's channel stays ${current.channel}`)
          const fields = yield* fieldsOf(input)
          const row = yield* repo.updateTemplate(workspace, current.id, fields, by.id).pipe(Effect.catch(onUnique(input.name)))
          if (row === undefined) return yield* templateNotFound(id)
          return toTemplate(row)
        })

      const remove = (workspace: string, id: string) =>
        Effect.gen(function* () {
          const current = yield* found(workspace, id)
          yield* Effect.orDie(repo.deleteTemplate(workspace, current.id))
        })

      const list = (workspace: string, page: number, limit: number) =>
        Effect.map(Effect.orDie(repo.listTemplates(workspace, limit, (page - 1) * limit)), ({ rows, total }) => ({
          data: rows.map(toTemplate),
          total,
          page,
          limit
        }))

      const versions = (workspace: string, id: string) =>
        Effect.gen(function* () {
          const current = yield* found(workspace, id)
          const rows = yield* Effect.orDie(repo.templateVersions(current.id))
          return { versions: rows.map(toTemplateVersion) }
        })

      const preview = (workspace: string, id: string, variables: Readonly<Record<string, unknown>>) =>
        Effect.flatMap(found(workspace, id), (row) =>
          Effect.flatMap(compiledOf(row), (compiled) => Effect.map(render(compiled, variables), withText))
        )

      const previewDraft = (input: DraftPreviewRequest) =>
        Effect.gen(function* () {
          const fields = yield* fieldsOf({ ...input, name: "preview" })
          const compiled = yield* compile(fields)
          return withText(yield* render(compiled, input.variables ?? {}))
        })

      const resolve = (workspace: string, idOrName: string) =>
        Effect.gen(function* () {
          const row = yield* Effect.orDie(repo.findTemplate(workspace, idOrName))
          if (row === undefined) return undefined
          return { row, compiled: yield* compiledOf(row) }
        })

      return TemplateService.of({
        create,
        update,
        remove,
        get: (workspace, id) => Effect.map(found(workspace, id), toTemplate),
        list,
        versions,
        preview,
        previewDraft,
        resolve
      })
    })
  )
}
