// Metrics of the events domain (GET /metrics, README "What to watch on /metrics"): the outbox relay, webhook
// deliveries and realtime clients. The relay and the dispatcher run in the events singleton, so their gauges exist
// only on the node that owns it; counters are per node (sum them over the cluster).
import { Metric } from "effect"

/** Events handed to every consumer and marked processed. */
export const eventsRelayed = Metric.counter("troupe_events_relayed_total", {
  description: "Events relayed (handed to webhooks, realtime and triggers, and marked processed) by this node",
  incremental: true
})

/** How long the oldest event the relay has seen unprocessed has waited (0 once caught up). Owner node only. */
export const relayLag = Metric.gauge("troupe_events_relay_lag_seconds", {
  description: "Age in seconds of the oldest committed event not yet relayed, as the relay last saw it; 0 when caught up"
})

/** Relay steps that failed (and were retried after a second). */
export const relayFailures = Metric.counter("troupe_events_relay_failures_total", {
  description: "Outbox relay steps that failed and were retried (a batch that keeps failing holds every later event back)",
  incremental: true
})

const deliveries = (outcome: "delivered" | "retried" | "failed") =>
  Metric.counter("troupe_webhook_deliveries_total", {
    description:
      "Webhook delivery attempts by outcome: delivered, retried (failed, another attempt scheduled), failed (last attempt failed)",
    incremental: true,
    attributes: { outcome }
  })

export const webhookDelivered = deliveries("delivered")
export const webhookRetried = deliveries("retried")
export const webhookFailed = deliveries("failed")

/** Webhook requests open right now. Owner node only. */
export const webhookInFlight = Metric.gauge("troupe_webhook_deliveries_in_flight", {
  description: "Webhook requests in flight from this node (the events singleton's owner)"
})

/** Open server-sent event streams on this node. */
export const sseClients = Metric.gauge("troupe_sse_clients", {
  description: "Server-sent event streams open on this node"
})
