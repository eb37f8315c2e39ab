// What deleting a file does to the records that name it (a `format: "file"` property, docs/storage.md "Records that
// point at files"). The records domain provides it (records/FileReferrersLayer.ts); storage only calls it, inside the
// transaction that deletes the file, so that storage never imports records. Without it (a node or test that wires
// storage alone) a delete touches no record.
import type { Principal } from "@troupe/api/Authorization"
import type { Conflict } from "@troupe/api/Errors"
import { Context, type Effect } from "effect"

export class FileReferrers extends Context.Service<
  FileReferrers,
  {
    /** restrict → Conflict (409); set_null → the property cleared as a new version; cascade → the records deleted. */
    readonly beforeDelete: (workspace: string, fileId: string, principal: Principal) => Effect.Effect<void, Conflict>
  }
>()("@troupe/server/storage/FileReferrers") {}
