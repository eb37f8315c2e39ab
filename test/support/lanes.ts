// Requests answered so far by each lane of the node (GET /metrics: troupe_http_requests_total of one route), for the
// tests that check a fast lane takes what it should and leaves the rest to the ordinary stack.
import { expect } from "vitest"
import type { TestNode } from "./TestServer.ts"

export const answeredByLane = async (node: Pick<TestNode, "request">, metricsToken: string, route: string, method?: string) => {
  const res = await node.request("GET", "/metrics", { token: metricsToken })
  expect(res.status).toBe(200)
  const count = (lane: string) =>
    (res.text as string)
      .split("\n")
      .filter((line) => line.startsWith("troupe_http_requests_total{") && line.includes(`route="${route}"`))
      .filter((line) => line.includes(`lane="${lane}"`) && (method === undefined || line.includes(`method="${method}"`)))
      .reduce((sum, line) => sum + Number(line.slice(line.lastIndexOf(" ") + 1)), 0)
  return { fast: count("fast"), stack: count("stack") }
}
