// Image variants of stored files (docs/storage.md, "Images"): one row per file, size and fit, naming the blob that
// holds the resized bytes. The primary key settles two nodes (or requests) making the same variant at once: the
// first insert wins, the other's blob is removed. The rows go with the file (the delete removes their blobs too).
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE TABLE storage_variants (
    file_id uuid NOT NULL REFERENCES storage_files(id) ON DELETE CASCADE,
    variant text NOT NULL,
    blob_key text NOT NULL,
    content_type text NOT NULL,
    size bigint NOT NULL,
    sha256 text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (file_id, variant)
  )`
  // the orphan sweeps ask, per blob, whether a variant names it
  yield* sql`CREATE INDEX storage_variants_blob ON storage_variants (blob_key)`
})
