// The notification domain on one node: settings, templates and sends (the services behind the routes and
// `api.sendEmail` / `api.sendSms`), the providers, and this node's outbox worker.
import { Layer } from "effect"
import { NotificationRepo } from "./NotificationRepo.ts"
import { NotificationService } from "./NotificationService.ts"
import { NotificationWorker } from "./NotificationWorker.ts"
import { Providers } from "./Providers.ts"
import { SettingsService } from "./SettingsService.ts"
import { TemplateService } from "./TemplateService.ts"

/** Provides NotificationService, TemplateService, SettingsService and NotificationWorker. */
export const NotificationLayer = Layer.mergeAll(SettingsService.layer, NotificationService.layer).pipe(
  Layer.provideMerge(NotificationWorker.layer),
  Layer.provideMerge(TemplateService.layer),
  Layer.provideMerge(Providers.layer),
  Layer.provideMerge(NotificationRepo.layer)
)
