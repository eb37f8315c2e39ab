// The search domain on one node: the service behind GET /search and this node's re-index loop.
import { Layer } from "effect"
import { ReindexerLayer } from "./Reindexer.ts"
import { SearchService } from "./SearchService.ts"

/** Provides SearchService and runs the re-indexer. */
export const SearchLayer = Layer.merge(SearchService.layer, ReindexerLayer)
