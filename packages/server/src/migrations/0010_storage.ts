// Storage (docs/storage.md): file metadata per workspace, the usage counter the quota is checked against (one row
// per workspace, locked by each upload's transaction so concurrent uploads never pass the quota together), and
// the chunk table of the PostgreSQL store (256 KiB rows; unused on the disk and S3 stores). A chunk row whose
// file has no metadata row is an upload in flight or an orphan of a crash: the sweeper drops those older than
// an hour.
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`CREATE TABLE storage_files (
    id uuid PRIMARY KEY,
    workspace text NOT NULL REFERENCES workspaces(slug) ON DELETE CASCADE,
    name text NOT NULL,
    folder text NOT NULL DEFAULT '',
    content_type text NOT NULL,
    size bigint NOT NULL,
    sha256 text NOT NULL,
    metadata jsonb NOT NULL DEFAULT '{}',
    blob_key text NOT NULL,
    created_by text,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
  )`
  yield* sql`CREATE INDEX storage_files_list ON storage_files (workspace, created_at DESC, id DESC)`
  yield* sql`CREATE INDEX storage_files_folder ON storage_files (workspace, folder, name)`
  yield* sql`CREATE INDEX storage_files_blob ON storage_files (blob_key)`
  yield* sql`CREATE TABLE storage_usage (
    workspace text PRIMARY KEY REFERENCES workspaces(slug) ON DELETE CASCADE,
    files bigint NOT NULL DEFAULT 0,
    bytes bigint NOT NULL DEFAULT 0
  )`
  yield* sql`CREATE TABLE storage_chunks (
    blob_key text NOT NULL,
    seq integer NOT NULL,
    data bytea NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (blob_key, seq)
  )`
})
