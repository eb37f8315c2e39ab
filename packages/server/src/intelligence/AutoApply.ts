// Following the data in `auto-evolving`: with the structure's discovery setting `autoApply` on (default off), new
// additive suggestions (`add_property`) of at least AUTO_APPLY_CONFIDENCE are accepted at once by the service
// itself, through the normal structure update (a new version, records validated as any update does). Anything
// else stays a pending suggestion for a person.
import type { Principal } from "@troupe/api/Authorization"
import { Effect } from "effect"
import type { StructureService } from "../structures/StructureService.ts"
import { applySuggestion } from "./Inference.ts"
import type { IntelligenceRepo, NewSuggestion } from "./IntelligenceRepo.ts"

export const AUTO_APPLY_CONFIDENCE = 0.95

/** Who the structure update is made by: the service itself, with no permission beyond changing structures. */
const discoverer = (workspace: string): Principal => ({
  kind: "service",
  id: "schema-discovery",
  name: "schema discovery",
  workspace,
  role: undefined,
  permissions: new Set(["write:structures"]),
  isPlatformAdmin: false,
  groups: []
})

export const autoApply = (
  deps: { readonly repo: IntelligenceRepo["Service"]; readonly structures: StructureService["Service"] },
  workspace: string,
  structureId: string,
  added: ReadonlyArray<NewSuggestion>
) =>
  Effect.gen(function* () {
    const candidates = added.filter((s) => s.kind === "add_property" && s.confidence >= AUTO_APPLY_CONFIDENCE)
    if (candidates.length === 0) return
    const settings = yield* deps.repo.getConfig(structureId, "discovery")
    if (settings?.autoApply !== true) return
    for (const s of candidates) {
      const structure = yield* deps.structures.get(workspace, structureId)
      if (structure.schemaDiscoveryMode !== "auto-evolving") return
      const applied = applySuggestion(structure, s)
      if ("conflict" in applied) continue
      yield* deps.structures.update(workspace, structureId, { properties: applied.properties }, discoverer(workspace))
      yield* deps.repo.resolveSchemaSuggestion(s.id, "accepted", "schema-discovery")
    }
  }).pipe(Effect.catchCause((cause) => Effect.logWarning("schema discovery: applying a suggestion automatically failed", cause)))
