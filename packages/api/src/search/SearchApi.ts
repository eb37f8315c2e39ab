/**
 * The search service's route (CONTRACT §8.2) under `/search/workspace/{ws}/api/v1`: ranked, typo-tolerant full-text
 * search over the records of the structures the caller may read.
 *
 * @since 0.1.0
 */
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { Authorization, RateClass, RequiredPermission } from "../Authorization.ts"
import { BadRequest } from "../Errors.ts"
import { WorkspaceParams } from "../Workspace.ts"
import { SearchQuery, SearchResults } from "./Search.ts"

/** The base path of the search service. */
export const searchBase = "/search/workspace/:workspace/api/v1" as const

/** @category groups */
export class SearchApi extends HttpApiGroup.make("search")
  .add(
    HttpApiEndpoint.get("search", "/search", { params: WorkspaceParams, query: SearchQuery, success: SearchResults, error: BadRequest })
      .annotate(RequiredPermission, "read:records")
      .annotate(RateClass, "reads")
  )
  .middleware(Authorization)
  .prefix(searchBase)
  .annotateMerge(
    OpenApi.annotations({
      title: "Search",
      description:
        "Full-text search over records on a PostgreSQL index: every word must match, the last also as a prefix, words of " +
        "5+ letters tolerate one typo and 9+ two; ranked by field weight, then ts_rank_cd; matches in <mark>."
    })
  ) {}
