// Handler of the search group: one service call (the endpoint's RequiredPermission is read:records).
import { Api } from "@troupe/api/Api"
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { SearchService } from "./SearchService.ts"

export const SearchHandlers = HttpApiBuilder.group(
  Api,
  "search",
  Effect.fn(function* (handlers) {
    const service = yield* SearchService
    return handlers.handle("search", ({ params, query }) => service.search(params.workspace, query))
  })
)
