// Which store a node uses (docs/storage.md, "Choosing a store"): TROUPE_STORAGE=s3://… → S3; else a PostgreSQL
// node keeps the bytes in its database (every node of the cluster serves every file); else the embedded node
// keeps them on disk under TROUPE_DATA_DIR.
import { Effect, Layer, Option } from "effect"
import type { SqlClient } from "effect/sql"
import { AppConfig } from "../platform/AppConfig.ts"
import type { BlobStore } from "./BlobStore.ts"
import { DiskStoreLayer } from "./DiskStore.ts"
import { PgStoreLayer } from "./PgStore.ts"
import { S3StoreLayer } from "./S3Store.ts"

export const BlobStoreLayer: Layer.Layer<BlobStore, never, AppConfig | SqlClient.SqlClient> = Layer.unwrap(
  Effect.gen(function* (): Effect.fn.Return<Layer.Layer<BlobStore, never, AppConfig | SqlClient.SqlClient>, never, AppConfig> {
    const config = yield* AppConfig
    if (Option.isSome(config.storage.url)) return S3StoreLayer(config.storage.url.value)
    if (Option.isSome(config.databaseUrl)) return PgStoreLayer(config.storage.sweepSeconds)
    return Layer.orDie(DiskStoreLayer)
  })
).pipe(Layer.orDie)
