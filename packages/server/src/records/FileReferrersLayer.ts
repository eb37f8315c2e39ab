// The records' side of deleting a file (storage/FileReferrers.ts): the onDelete of `format: "file"` properties,
// written as the deleting caller.
import { Effect, Layer } from "effect"
import { FileReferrers } from "../storage/FileReferrers.ts"
import { RecordService } from "./RecordService.ts"
import { writerOf } from "./WriteRoutes.ts"

export const FileReferrersLayer = Layer.effect(
  FileReferrers,
  Effect.gen(function* () {
    const records = yield* RecordService
    return FileReferrers.of({
      beforeDelete: (workspace, fileId, principal) => records.fileDeleted(workspace, fileId, writerOf(principal, {}, undefined))
    })
  })
)
