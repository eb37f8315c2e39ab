// Files of a workspace by id, for the record side of `format: "file"` properties (docs/storage.md, "Records that
// point at files"): writes check that the files exist, reads expand them. The storage domain provides it
// (storage/FileLookupLayer.ts); the interface lives here, below records and storage both, so neither imports the
// other.
import { Context, type Effect } from "effect"

export class FileLookup extends Context.Service<
  FileLookup,
  {
    /**
     * The files of `workspace` among `ids` (malformed ids are not found), keyed by lowercase id, as
     * GET /files/{id}/metadata shows them. `lock`: key-share locked until the caller's transaction ends, so the
     * file's delete (which locks its row first, then applies onDelete) waits for the write and then sees it.
     */
    readonly byIds: (workspace: string, ids: ReadonlyArray<string>, lock?: boolean) => Effect.Effect<Map<string, unknown>>
  }
>()("@troupe/server/query/FileLookup") {}
