// The data intelligence domain on one node: the service behind the routes and its job worker.
import { Layer } from "effect"
import { IntelligenceRepo } from "./IntelligenceRepo.ts"
import { IntelligenceService } from "./IntelligenceService.ts"

/** Provides IntelligenceService and IntelligenceRepo. */
export const IntelligenceLayer = IntelligenceService.layer.pipe(Layer.provideMerge(IntelligenceRepo.layer))
