// The storage domain on one node: the service behind the routes and `api.storage.*`, its repository, and the
// BlobStore this node was configured with (Stores.ts).
import { Layer } from "effect"
import { BlobStoreLayer } from "./Stores.ts"
import { StorageRepo } from "./StorageRepo.ts"
import { StorageService } from "./StorageService.ts"

/** Provides StorageService (and StorageRepo, BlobStore). */
export const StorageLayer = StorageService.layer.pipe(Layer.provideMerge(StorageRepo.layer), Layer.provideMerge(BlobStoreLayer))
