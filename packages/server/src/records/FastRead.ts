// The hot reads in the fast lane (platform/FastRoutes.ts), each with the same service calls and rendering as its
// ordinary handler (records/http.ts); authentication, the route and the schemas come from the endpoint:
//   - `records.get` without query options and with a UUID id (the ordinary handler reads any other id as a slug
//     and honours the options): RecordService.get;
//   - `records.list`, the generation B list (RecordViews.listB), bracket filters included.
// Any other form of these requests (query options on the read, no bearer token, a repeated parameter, a NUL or lone
// surrogate, which the edge refuses) is left to the ordinary handlers. (The query domain's lane is query/FastQuery.ts.)
import { Effect } from "effect"
import type { FastTable } from "../platform/FastRoutes.ts"
import { StructureService } from "../structures/StructureService.ts"
import { isUuid, toRecordB } from "../query/RecordRow.ts"
import { RecordQuery } from "../query/RecordQuery.ts"
import { RecordService } from "./RecordService.ts"
import { recordViews } from "./RecordViews.ts"

const noKeys = (record: Readonly<Record<string, unknown>>) => {
  for (const _ in record) return false
  return true
}

/** The fast lanes of record reads. */
export const fastReadRoutes: Effect.Effect<FastTable, never, RecordService | RecordQuery | StructureService> = Effect.gen(function* () {
  const records = yield* RecordService
  const views = recordViews(records, yield* RecordQuery, yield* StructureService)
  return {
    "records.get": {
      accepts: ({ params, searchParams }) => noKeys(searchParams) && isUuid(params.id),
      // shown as the ordinary handler shows it (no reveal: that takes a query option, which the lane leaves alone)
      run: ({ params, principal }) =>
        Effect.gen(function* () {
          const { row, structure, restoredFrom } = yield* records.get(params.workspace, params.id)
          const data = yield* views.shown(structure, row.data, principal, false)
          return { status: 200, body: toRecordB(row, data, restoredFrom !== undefined ? { restoredFrom } : {}) }
        })
    },
    "records.list": ({ params, query, searchParams, principal }) =>
      Effect.map(views.listB(params.workspace, query, Object.entries(searchParams), principal), (body) => ({ status: 200, body }))
  }
})
