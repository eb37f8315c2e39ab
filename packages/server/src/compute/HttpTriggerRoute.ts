// HTTP triggers (README "Triggers"): any method on `/workspace/{ws}/api/v1/http-triggers/{path}` (and the legacy
// `/webhook/{path}`) runs the trigger whose path it is. A raw route (not HttpApi): any method, any body.
// - Bearer token with `execute:functions`; counts against the workspace's `functions` rate class.
// - executionParams = {method, path, headers (without authorization and cookie), query, body}; a JSON body is
//   parsed (malformed JSON is a 400), anything else is passed as text.
// - Sync: the run executes on this node and the answer is 200 {success, data | error, runId}, 500 when the function
//   threw, 504 when it timed out. `?async=true`: queued, 202 {jobId}. HEAD answers the same status without a body.
// - An unknown path is a 404; a trigger whose function was deleted answers 400.
import { badRequest, notFound, unauthorized } from "@troupe/api/Errors"
import { Effect } from "effect"
import { HttpRouter, type HttpServerRequest, HttpServerResponse } from "effect/http"
import { Authenticator } from "../identity/Authenticate.ts"
import { flag } from "../lib/rows.ts"
import { outcomeBody, RunWorker } from "./RunWorker.ts"
import { RunService } from "./RunService.ts"
import { FunctionRepo } from "./FunctionRepo.ts"
import { TriggerRepo } from "./TriggerRepo.ts"
import { normalizePath } from "./TriggerService.ts"
import { bearerOf } from "../platform/EdgeInput.ts"
import { textProblem } from "../platform/InputGuards.ts"

export const HTTP_TRIGGER_PATHS = ["/workspace/:workspace/api/v1/http-triggers/*", "/workspace/:workspace/api/v1/webhook/*"] as const

const hidden = new Set(["authorization", "cookie", "proxy-authorization"])

export const HttpTriggerRoute = HttpRouter.use((router) =>
  Effect.gen(function* () {
    const authenticator = yield* Authenticator
    const triggers = yield* TriggerRepo
    const functions = yield* FunctionRepo
    const worker = yield* RunWorker
    const runs = yield* RunService

    const handle = (request: HttpServerRequest.HttpServerRequest) =>
      Effect.gen(function* () {
        const params = yield* HttpRouter.params
        const workspace = params.workspace ?? ""
        const url = new URL(request.url, "http://localhost")
        const token = bearerOf(request.headers.authorization)
        if (token === undefined || token === "") return yield* unauthorized("Missing bearer token")
        const principal = yield* authenticator.authenticate(token, { workspace, permission: "execute:functions", rateClass: "functions" })
        const rest = url.pathname.replace(/^\/workspace\/[^/]+\/api\/v1\/(http-triggers|webhook)\/?/, "")
        let path: string
        try {
          path = normalizePath(decodeURIComponent(rest))
        } catch {
          return yield* badRequest("The trigger path is not valid URL encoding")
        }
        const trigger = path === "" ? undefined : yield* Effect.orDie(triggers.byPath(workspace, path))
        if (trigger === undefined || trigger.executionType !== "http-trigger") {
          return yield* notFound({ message: `No HTTP trigger at /${path}` })
        }
        const fn = trigger.functionId === null ? undefined : yield* Effect.orDie(functions.get(workspace, trigger.functionId))
        if (fn === undefined) {
          return yield* badRequest({ message: `Function not found for trigger: ${trigger.id}` })
        }
        const text =
          request.method === "GET" || request.method === "HEAD"
            ? ""
            : yield* request.text.pipe(Effect.mapError(() => badRequest("The request body could not be read")))
        // a text body reaches the run's stored executionParams (jsonb): NUL and lone surrogates are refused there
        const problem = textProblem(text)
        if (problem !== undefined) return yield* badRequest({ message: `The request body ${problem}`, code: "VALIDATION_ERROR" })
        let body: unknown = text === "" ? null : text
        if (text !== "" && /^application\/([\w.+-]+\+)?json\b/i.test(request.headers["content-type"] ?? "")) {
          try {
            body = JSON.parse(text)
          } catch {
            return yield* badRequest({ message: "Malformed JSON body", code: "VALIDATION_ERROR" })
          }
        }
        const headers = Object.fromEntries(Object.entries(request.headers).filter(([k]) => !hidden.has(k.toLowerCase())))
        const query: Record<string, string | Array<string>> = {}
        for (const [k, v] of url.searchParams) {
          const prior = query[k]
          query[k] = prior === undefined ? v : Array.isArray(prior) ? [...prior, v] : [prior, v]
        }
        const spec = {
          workspace,
          functionId: fn.id,
          triggerId: trigger.id,
          source: "webhook" as const,
          executionParams: { method: request.method, path: `/${path}`, headers, query, body },
          actingAs: { kind: principal.kind, id: principal.id },
          executionContext: { triggerName: trigger.name, executionType: trigger.executionType, method: request.method },
          fired: { name: trigger.name, executionType: trigger.executionType }
        }
        if (flag(url.searchParams.get("async") ?? undefined)) {
          const queued = yield* runs.enqueue(spec)
          return HttpServerResponse.jsonUnsafe({ jobId: queued.jobId, status: "queued", queuedAt: queued.queuedAt }, { status: 202 })
        }
        const run = yield* worker.runNow(spec)
        const status = run.status === "completed" ? 200 : run.status === "timed_out" ? 504 : 500
        return request.method === "HEAD"
          ? HttpServerResponse.empty({ status })
          : HttpServerResponse.jsonUnsafe(outcomeBody(run), { status })
      })

    for (const path of HTTP_TRIGGER_PATHS) yield* router.add("*", path, handle)
  })
)
