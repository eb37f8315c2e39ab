// The records' side of deleting a file (storage/FileReferrers.ts): the onDelete of `format: "file"` properties,
// written as the deleting caller.
import { Effect, Layer } from "effect"
import { FileReferrers } from "../storage/FileReferrers.ts"
import { RecordWriter } from "./RecordEntity.ts"
import { writerOf } from "./WriteRoutes.ts"

export const FileReferrersLayer = Layer.effect(
  FileReferrers,
  Effect.gen(function* () {
    const records = yield* RecordWriter
    return FileReferrers.of({
      beforeDelete: (workspace, fileId, principal) => records.fileDeleted({ workspace, fileId, writer: writerOf(principal, {}, undefined) })
    })
  })
)
