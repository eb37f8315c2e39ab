// The search domain on one node: the service behind GET /search and its background loops (the re-indexer, the
// index's pending-list merge, the lexicon's queue).
import { Layer } from "effect"
import { GinPendingListsLayer } from "../platform/GinPendingLists.ts"
import { LexiconDrainLayer } from "./Lexicon.ts"
import { ReindexerLayer } from "./Reindexer.ts"
import { SearchService } from "./SearchService.ts"

/** The GIN index of records.search_vector (migration 0011), fed through its pending list (migration 0017). */
const SEARCH_INDEX = "records_search"

/** Provides SearchService and runs the search domain's loops. */
export const SearchLayer = Layer.mergeAll(SearchService.layer, ReindexerLayer, LexiconDrainLayer, GinPendingListsLayer([SEARCH_INDEX]))
