// The events domain on one node: webhook management, the per-node realtime hub, and the events singleton (outbox
// relay + webhook dispatcher + retention sweep), which runs on exactly one node of the cluster.
import { Layer } from "effect"
import { EventsSingletonLayer } from "./OutboxRelay.ts"
import { RealtimeHub } from "./RealtimeHub.ts"
import { WebhookRepo } from "./WebhookRepo.ts"
import { WebhookService } from "./WebhookService.ts"

export const EventsLayer = Layer.mergeAll(WebhookService.layerNoDeps, RealtimeHub.layer, EventsSingletonLayer).pipe(
  Layer.provide(WebhookRepo.layer)
)
