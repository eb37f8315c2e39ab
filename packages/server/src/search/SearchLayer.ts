// The search domain on one node: the service behind GET /search and its background loops (the re-indexer, the
// index's pending-list merge, the lexicon's queue).
import { Layer } from "effect"
import { LexiconDrainLayer } from "./Lexicon.ts"
import { PendingListLayer } from "./PendingList.ts"
import { ReindexerLayer } from "./Reindexer.ts"
import { SearchService } from "./SearchService.ts"

/** Provides SearchService and runs the search domain's loops. */
export const SearchLayer = Layer.mergeAll(SearchService.layer, ReindexerLayer, PendingListLayer, LexiconDrainLayer)
