// Sends and the message log (CONTRACT §8.3). A send is checked (recipients, sender, sizes: each problem a 400 naming
// its field), rendered (a template by id or name, strict variables; a text part made from the HTML when only HTML is
// given), given a Message-ID that every attempt reuses, and stored as one `queued` row: the answer (202) follows the
// commit, and the outbox worker of some node sends it. Rows of concurrent sends without an Idempotency-Key are
// written together (lib/GroupCommit: one INSERT for whatever queued while the last ran), each already leased by this
// node when its worker has a free slot (then sent here at once, no claim); a send with a key claims the
// key in the same transaction as its row, so the key answers that message for 24 hours (records' upsert does the
// same) and the same key with another request is a 422.
import { type BadRequest, malformedId, type NotFound, notFound, type Unprocessable, unprocessable } from "@troupe/api/Errors"
import type { EmailRequest, MessageDetail, MessageList, SmsRequest } from "@troupe/api/notification/Notification"
import { Clock, Context, Effect, Exit, Layer } from "effect"
import { SqlClient } from "effect/sql"
import * as Crypto from "node:crypto"
import * as GroupCommit from "../lib/GroupCommit.ts"
import { isoString } from "../lib/rows.ts"
import { isUuid, uuidv7 } from "../lib/Uuid.ts"
import { AppConfig } from "../platform/AppConfig.ts"
import { claimIdempotencyKey, storedOutcome, storeOutcome } from "../platform/IdempotencyKeys.ts"
import { canonicalJson } from "../structures/Formats.ts"
import { emailProblem, parseMailbox, phoneProblem } from "./Addresses.ts"
import { type MessageRow, messageColumns, type NewMessage, toMessage, toMessageDetail } from "./model.ts"
import { NotificationWorker } from "./NotificationWorker.ts"
import { NotificationRepo } from "./NotificationRepo.ts"
import { invalid, invalidAll } from "./Problems.ts"
import { Providers } from "./Providers.ts"
import { TemplateService } from "./TemplateService.ts"
import { type Parts, render, withText } from "./Templates.ts"

/** Recipients of one email (to, cc and bcc together). */
export const MAX_RECIPIENTS = 50
/** RFC 5322's line limit: a subject longer than this cannot be one header line. */
export const MAX_SUBJECT = 998
/** Each body part, in UTF-8 bytes. */
export const MAX_BODY_BYTES = 256 * 1024
/** One SMS (ten concatenated segments, as providers cap it). */
export const MAX_SMS_CHARS = 1600

/** Who asked for a send (stored as the message's `created_by`), and the function run it came from. */
export interface Sender {
  readonly id: string
  readonly runId?: string | undefined
  readonly depth?: number | undefined
}

export interface AcceptedSend {
  readonly id: string
  readonly status: "queued"
  /** an Idempotency-Key answered a message accepted before */
  readonly replayed: boolean
}

/** `<id@domain>`: the Message-ID every attempt of a message reuses (the domain of its sender). */
export const messageIdFor = (id: string, from: string | null) => {
  const address = from === null ? undefined : parseMailbox(from)
  const domain = address?.ok === true ? address.mailbox.address.split("@")[1]!.toLowerCase() : "troupe.local"
  return `<${id}@${domain}>`
}

const listOf = (value: string | ReadonlyArray<string> | undefined) =>
  value === undefined ? [] : typeof value === "string" ? [value] : [...value]

export type SendError = BadRequest | Unprocessable

/** A message waiting for the group commit; `local`: this node's worker reserved a slot to send it at once. */
interface Pending {
  readonly message: NewMessage
  readonly local: boolean
}

/** The row of a message stored leased by this node, as the worker reads rows (no read back). */
const leasedRow = (m: NewMessage, at: string): MessageRow => ({
  ...messageColumns(m),
  status: "sending",
  attempts: 0,
  last_error: null,
  provider_message_id: null,
  next_attempt_at: null,
  created_at: at,
  sent_at: null
})

export class NotificationService extends Context.Service<
  NotificationService,
  {
    readonly sendEmail: (
      workspace: string,
      input: EmailRequest,
      by: Sender,
      idempotencyKey?: string
    ) => Effect.Effect<AcceptedSend, SendError>
    readonly sendSms: (workspace: string, input: SmsRequest, by: Sender, idempotencyKey?: string) => Effect.Effect<AcceptedSend, SendError>
    readonly list: (
      workspace: string,
      query: { channel?: string | undefined; status?: string | undefined; to?: string | undefined; page: number; limit: number }
    ) => Effect.Effect<MessageList>
    readonly get: (workspace: string, id: string) => Effect.Effect<MessageDetail, BadRequest | NotFound>
  }
>()("@troupe/server/notification/NotificationService") {
  static readonly layer = Layer.effect(
    NotificationService,
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const repo = yield* NotificationRepo
      const templates = yield* TemplateService
      const providers = yield* Providers
      const worker = yield* NotificationWorker
      const leaseMs = (yield* AppConfig).notification.leaseMs

      // Sends without a key: one INSERT for the batch; a failed batch is written again row by row. A message for which
      // this node's worker had a free slot is stored already leased by it and sent here at once (no NOTIFY, no claim).
      const lease = (items: ReadonlyArray<Pending>) => ({
        owner: worker.owner,
        leaseMs,
        ids: new Set(items.filter((i) => i.local).map((i) => i.message.id))
      })
      const started = (items: ReadonlyArray<Pending>) =>
        Effect.gen(function* () {
          const at = isoString(new Date(yield* Clock.currentTimeMillis))
          for (const item of items) if (item.local) yield* worker.begin(leasedRow(item.message, at))
        })
      const inserts = yield* GroupCommit.make<Pending, void, Error>({
        maxBatch: 256,
        concurrency: sql.driver === "pglite" ? 1 : 2,
        run: (items) =>
          repo
            .insertMessages(
              items.map((i) => i.message),
              lease(items)
            )
            .pipe(
              Effect.andThen(started(items)),
              Effect.as(items.map(() => Exit.void)),
              Effect.catch(() =>
                Effect.forEach(items, (item) =>
                  Effect.exit(
                    repo.insertMessages([item.message], lease([item])).pipe(
                      Effect.andThen(started([item])),
                      Effect.orDie,
                      Effect.onExit((exit) =>
                        Exit.isFailure(exit) && item.local
                          ? Effect.sync(() => worker.unreserve(item.message.id, item.message.workspace))
                          : Effect.void
                      )
                    )
                  )
                )
              )
            ),
        onShutdown: () => new Error("the node stopped before the message was stored")
      })

      /** The parts of a send: its template rendered, or its own subject and bodies as written. */
      const partsOf = (
        workspace: string,
        channel: "email" | "sms",
        input: { template?: string; variables?: Record<string, unknown>; subject?: string; text?: string; html?: string }
      ) =>
        Effect.gen(function* () {
          if (input.template === undefined) {
            return { parts: { subject: input.subject ?? null, text: input.text ?? null, html: input.html ?? null }, template: null }
          }
          const given = (["subject", "text", "html"] as const).filter((f) => input[f] !== undefined)
          if (given.length > 0) return yield* invalid(given[0]!, `give either a template or ${given.join(", ")}, not both`)
          const template = yield* templates.resolve(workspace, input.template)
          if (template === undefined) return yield* invalid("template", `no template "${input.template}" in this workspace`)
          if (template.row.channel !== channel) {
            return yield* invalid("template", `template "${template.row.name}" is for ${template.row.channel}, not ${channel}`)
          }
          const parts: Parts = yield* render(template.compiled, input.variables ?? {})
          return { parts, template: template.row }
        })

      /** Stores the message; with a key, in one transaction with the key's claim and answer. */
      const store = (message: NewMessage, route: string, request: unknown, key: string | undefined) => {
        const accepted: AcceptedSend = { id: message.id, status: "queued", replayed: false }
        if (key === undefined) {
          return Effect.as(Effect.orDie(inserts.submit({ message, local: worker.reserve(message.id, message.workspace) })), accepted)
        }
        const hash = Crypto.createHash("sha256").update(canonicalJson({ route, request })).digest("hex")
        return sql
          .withTransaction(
            Effect.gen(function* () {
              if (!(yield* claimIdempotencyKey(sql, message.workspace, key, hash))) {
                const stored = yield* storedOutcome(sql, message.workspace, key)
                if (stored === undefined || stored.requestHash !== hash) {
                  return yield* unprocessable({
                    message: "This Idempotency-Key was used with a different request",
                    code: "IDEMPOTENCY_KEY_REUSED"
                  })
                }
                const body = stored.body as { id: string }
                return { id: body.id, status: "queued" as const, replayed: true }
              }
              yield* repo.insertMessages([message])
              yield* storeOutcome(sql, message.workspace, key, 202, { id: message.id, status: "queued" })
              return accepted
            })
          )
          .pipe(Effect.catchTag("SqlError", Effect.die))
      }

      const sizeProblems = (parts: Parts) => {
        const problems: Array<readonly [string, string]> = []
        if (parts.subject !== null) {
          if (parts.subject.length > MAX_SUBJECT) problems.push(["subject", `subject must be at most ${MAX_SUBJECT} characters`])
          if (/[\r\n]/.test(parts.subject)) problems.push(["subject", "subject must be one line"])
        }
        for (const field of ["text", "html"] as const) {
          const body = parts[field]
          if (body !== null && Buffer.byteLength(body, "utf8") > MAX_BODY_BYTES) {
            problems.push([field, `${field} must be at most ${MAX_BODY_BYTES / 1024} KB`])
          }
        }
        return problems
      }

      const sendEmail = (workspace: string, input: EmailRequest, by: Sender, key?: string) =>
        Effect.gen(function* () {
          const problems: Array<readonly [string, string]> = []
          const lists = { to: listOf(input.to), cc: listOf(input.cc), bcc: listOf(input.bcc) }
          for (const [field, list] of Object.entries(lists)) {
            const single = typeof input[field as keyof typeof lists] === "string"
            list.forEach((address, i) => {
              const problem = emailProblem(address.trim())
              const name = single ? field : `${field}[${i}]`
              if (problem !== undefined) problems.push([name, `${name} ${problem}`])
            })
          }
          if (lists.to.length === 0) problems.push(["to", "to must name at least one address"])
          const count = lists.to.length + lists.cc.length + lists.bcc.length
          if (count > MAX_RECIPIENTS)
            problems.push(["to", `at most ${MAX_RECIPIENTS} recipients per message (to, cc and bcc together); got ${count}`])
          if (input.from !== undefined) {
            const from = parseMailbox(input.from)
            if (!from.ok) problems.push(["from", `from ${from.problem}`])
          }
          if (problems.length > 0) return yield* invalidAll(problems)
          const { parts: given, template } = yield* partsOf(workspace, "email", input)
          if ((given.text ?? "").trim() === "" && (given.html ?? "").trim() === "") {
            return yield* invalid("text", "a message needs text or html (or a template that gives them)")
          }
          const sized = sizeProblems(given)
          if (sized.length > 0) return yield* invalidAll(sized)
          const parts = withText(given)
          const provider = yield* providers.resolve(workspace, "email")
          const from = input.from?.trim() ?? provider.from
          const id = uuidv7()
          const message: NewMessage = {
            id,
            workspace,
            channel: "email",
            to: lists.to.map((a) => a.trim()),
            cc: lists.cc.map((a) => a.trim()),
            bcc: lists.bcc.map((a) => a.trim()),
            from,
            subject: parts.subject,
            text: parts.text,
            html: parts.html,
            templateId: template?.id ?? null,
            templateName: template?.name ?? null,
            templateVersion: template?.version ?? null,
            messageId: messageIdFor(id, from),
            createdBy: by.id,
            runId: by.runId ?? null,
            runDepth: by.depth ?? null
          }
          return yield* store(message, "email", input, key)
        })

      const sendSms = (workspace: string, input: SmsRequest, by: Sender, key?: string) =>
        Effect.gen(function* () {
          const to = input.to.trim()
          const problem = phoneProblem(to)
          if (problem !== undefined) return yield* invalid("to", `to ${problem}`)
          const { parts, template } = yield* partsOf(workspace, "sms", input)
          const text = parts.text ?? ""
          if (text.trim() === "") return yield* invalid("text", "an SMS needs text (or a template that gives it)")
          if (text.length > MAX_SMS_CHARS)
            return yield* invalid("text", `an SMS is at most ${MAX_SMS_CHARS} characters; got ${text.length}`)
          const provider = yield* providers.resolve(workspace, "sms")
          const message: NewMessage = {
            id: uuidv7(),
            workspace,
            channel: "sms",
            to: [to],
            cc: [],
            bcc: [],
            from: provider.from,
            subject: null,
            text,
            html: null,
            templateId: template?.id ?? null,
            templateName: template?.name ?? null,
            templateVersion: template?.version ?? null,
            messageId: null,
            createdBy: by.id,
            runId: by.runId ?? null,
            runDepth: by.depth ?? null
          }
          return yield* store(message, "sms", input, key)
        })

      const list = (
        workspace: string,
        q: { channel?: string | undefined; status?: string | undefined; to?: string | undefined; page: number; limit: number }
      ) =>
        Effect.map(
          Effect.orDie(
            repo.listMessages(workspace, { channel: q.channel, status: q.status, to: q.to, limit: q.limit, offset: (q.page - 1) * q.limit })
          ),
          ({ rows, total }) => ({ data: rows.map(toMessage), total, page: q.page, limit: q.limit })
        )

      const get = (workspace: string, id: string): Effect.Effect<MessageDetail, BadRequest | NotFound> =>
        // a malformed id is the caller's mistake, not a missing message (docs/errors.md: 400, an unknown one 404)
        isUuid(id)
          ? Effect.flatMap(Effect.orDie(repo.getMessage(workspace, id)), (row) =>
              row === undefined ? Effect.fail(notFound(`Message not found: ${id}`)) : Effect.succeed(toMessageDetail(row))
            )
          : Effect.fail(malformedId("id", id, "message id"))

      return NotificationService.of({ sendEmail, sendSms, list, get })
    })
  )
}
