// Helpers for the record end-to-end tests: requests relative to the workspace base with a token, the contract
// error shape, structures, service-account tokens, and (PostgreSQL runs only) reads of the test database itself.
import postgres from "postgres"
import { expect } from "vitest"
import { clientCredentialsToken } from "./IdentityHelpers.ts"
import type { RequestOptions, Response, TestServer } from "./TestServer.ts"

export interface Client {
  readonly token: string
  readonly call: <T = any>(method: string, path: string, body?: unknown, headers?: Record<string, string>) => Promise<Response<T>>
  readonly raw: (method: string, path: string, options: RequestOptions) => Promise<Response>
}

/** Requests under `/workspace/<ws>/api/v1` with the given token. */
export const client = (server: TestServer, token: string): Client => ({
  token,
  call: (method, path, body, headers) =>
    server.request(method, server.base + path, { token, ...(body !== undefined ? { body } : {}), ...(headers ? { headers } : {}) }),
  raw: (method, path, options) => server.request(method, server.base + path, { token, ...options })
})

/** The one error body (README: Errors) with this status and code. */
export const expectError = (res: Response, status: number, code?: string) => {
  if (res.status !== status) throw new Error(`expected ${status}, got ${res.status}: ${res.text.slice(0, 500)}`)
  expect(res.body).toMatchObject({ statusCode: status })
  if (code !== undefined) expect(res.body.code).toBe(code)
  expect(typeof res.body.error).toBe("string")
  expect(typeof res.body.message).toBe("string")
  expect(typeof res.body.code).toBe("string")
  expect(Array.isArray(res.body.details)).toBe(true)
  for (const d of res.body.details) {
    expect(typeof d.field).toBe("string")
    expect(d.property).toBe(d.field)
    expect(typeof d.message).toBe("string")
  }
}

/** Asserts a status, showing the body when it differs. */
export const expectStatus = (res: Response, status: number) => {
  if (res.status !== status) throw new Error(`expected ${status}, got ${res.status}: ${res.text.slice(0, 800)}`)
}

let counter = 0
/** A unique lowercase slug for one test's structure. */
export const slug = (prefix: string) => `${prefix}-${Date.now().toString(36)}-${(counter++).toString(36)}`

/** Creates a structure and returns it (200 asserted). */
export const createStructure = async (api: Client, definition: Record<string, unknown>) => {
  const res = await api.call("POST", "/structures", definition)
  if (res.status !== 200 && res.status !== 201) throw new Error(`structure: ${res.status} ${res.text}`)
  return res.body as { id: string; recordSlug: string; properties: Array<{ id: string; name: string }> }
}

/** Creates a service account with a role or permissions and returns a client signed in as it (client credentials). */
export const createServiceAccountClient = async (
  server: TestServer,
  admin: Client,
  spec: { role?: string; permissions?: ReadonlyArray<string> }
) => {
  const res = await admin.call("POST", "/service-accounts", { name: `sa-${counter++}`, ...spec })
  if (res.status !== 201 && res.status !== 200) throw new Error(`service account: ${res.status} ${res.text}`)
  return client(server, await clientCredentialsToken(server, res.body.clientId, res.body.clientSecret))
}

/** How many live records a structure has (through the API). */
export const countOf = async (api: Client, structure: string, includeDeleted = false) => {
  const res = await api.call(
    "GET",
    `/records?structureId=${structure}&includeCount=true&limit=1${includeDeleted ? "&includeDeleted=true" : ""}`
  )
  expectStatus(res, 200)
  return res.body.pagination.total as number
}

/** The test database (PostgreSQL runs only): on PGlite it lives inside the server process. */
export const database = (server: TestServer) => {
  if (!server.databaseUrl) throw new Error("database() needs DATABASE_URL")
  return postgres(server.databaseUrl, { max: 2, onnotice: () => {} })
}

/** Subscribes to the workspace's server-sent events and keeps every message. */
export const subscribe = async (server: TestServer, token: string, query: string) => {
  const controller = new AbortController()
  const res = await fetch(`${server.baseUrl}/realtime/workspace/${server.workspace}/api/v1/events?${query}`, {
    headers: { authorization: `Bearer ${token}` },
    signal: controller.signal
  })
  expect(res.status).toBe(200)
  const messages: Array<any> = []
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader()
  let buffer = ""
  const pump = (async () => {
    while (true) {
      const { done, value } = await reader.read()
      if (done) return
      buffer += value
      let at: number
      while ((at = buffer.indexOf("\n\n")) >= 0) {
        const frame = buffer.slice(0, at)
        buffer = buffer.slice(at + 2)
        const data = frame
          .split("\n")
          .filter((l) => l.startsWith("data: "))
          .map((l) => l.slice(6))
          .join("\n")
        if (data.length > 0) messages.push(JSON.parse(data))
      }
    }
  })().catch(() => {})
  return {
    messages,
    close: async () => {
      controller.abort()
      await pump
    }
  }
}
