// The typed client against a running node: calls are the shared Api's own endpoints, failures arrive as the very
// error classes the server raised, and a service-account token source signs the calls.
import { ApiClient } from "@troupe/client/ApiClient"
import * as TokenSource from "@troupe/client/TokenSource"
import { NotFound, Unauthorized } from "@troupe/api/Errors"
import { Effect, Layer } from "effect"
import { FetchHttpClient } from "effect/http"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startServer, type TestServer } from "./support/TestServer.ts"

describe("@troupe/client", () => {
  let server: TestServer
  beforeAll(async () => {
    server = await startServer()
  })
  afterAll(async () => {
    await server?.close()
  })

  const run = <A, E>(effect: Effect.Effect<A, E, ApiClient>, token?: string) =>
    Effect.runPromise(effect.pipe(Effect.provide(ApiClient.layer({ baseUrl: server.baseUrl, ...(token ? { token } : {}) }))))

  it("calls the system endpoints", async () => {
    const health = await run(Effect.flatMap(Effect.service(ApiClient), (c) => c.health()))
    expect(health).toEqual({ status: "ok" })
  })

  it("creates and reads a structure with a user token", async () => {
    const token = await server.adminToken()
    const created = await run(
      Effect.gen(function* () {
        const client = yield* ApiClient
        const s = yield* client.structures.create({
          params: { workspace: server.workspace },
          payload: { name: "Client Notes", properties: [{ name: "title", type: "string", required: true }] }
        })
        const again = yield* client.structures.get({ params: { workspace: server.workspace, id: s.id } })
        return { s, again }
      }),
      token
    )
    expect(created.s.recordSlug).toBe("client-notes")
    expect(created.again.id).toBe(created.s.id)
    expect(created.again.properties[0]?.name).toBe("title")
  })

  it("fails with the server's typed errors", async () => {
    const token = await server.adminToken()
    const missing = await run(
      Effect.gen(function* () {
        const client = yield* ApiClient
        return yield* Effect.flip(
          client.structures.get({
            params: { workspace: server.workspace, id: "00000000-0000-4000-8000-000000000000" }
          })
        )
      }),
      token
    )
    expect(missing).toBeInstanceOf(NotFound)
    expect((missing as NotFound).code).toBe("STRUCTURE_NOT_FOUND")
    const anonymous = await run(
      Effect.gen(function* () {
        const client = yield* ApiClient
        return yield* Effect.flip(client.structures.list({ params: { workspace: server.workspace }, query: {} }))
      })
    )
    expect(anonymous).toBeInstanceOf(Unauthorized)
  })

  it("signs calls with a client-credentials token source", async () => {
    const admin = await server.adminToken()
    const sa = await server.request("POST", `${server.base}/service-accounts`, {
      token: admin,
      body: { name: "client-test", role: "developer" }
    })
    expect(sa.status).toBe(201)
    const program = Effect.gen(function* () {
      const tokens = yield* TokenSource.clientCredentials({
        baseUrl: server.baseUrl,
        clientId: sa.body.clientId,
        clientSecret: sa.body.clientSecret
      })
      return yield* Effect.gen(function* () {
        const client = yield* ApiClient
        return yield* client.structures.list({ params: { workspace: server.workspace }, query: {} })
      }).pipe(Effect.provide(ApiClient.layer({ baseUrl: server.baseUrl, token: tokens.provider })))
    })
    const list = await Effect.runPromise(program.pipe(Effect.provide(Layer.mergeAll(FetchHttpClient.layer))) as Effect.Effect<any, unknown>)
    expect(list.data.some((s: { recordSlug: string }) => s.recordSlug === "client-notes")).toBe(true)
  })
})
