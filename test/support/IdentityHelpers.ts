// Small helpers for identity HTTP tests: token requests, users with a role, service accounts.
import * as Jose from "jose"
import type { Response, TestNode, TestServer } from "./TestServer.ts"

/** POST /oidc/token form-encoded (RFC 6749). */
export const tokenRequest = async (
  node: Pick<TestNode, "baseUrl">,
  params: Record<string, string>,
  headers: Record<string, string> = {}
): Promise<Response> => {
  const res = await fetch(`${node.baseUrl}/oidc/token`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", ...headers },
    body: new URLSearchParams(params)
  })
  const text = await res.text()
  let body: unknown = text
  try {
    body = JSON.parse(text)
  } catch {
    // keep text
  }
  return { status: res.status, headers: res.headers, body, text }
}

/** A password-grant token for `username` in `workspace`. */
export const passwordToken = async (node: Pick<TestNode, "baseUrl">, username: string, password: string, workspace = "default") => {
  const res = await tokenRequest(node, { grant_type: "password", username, password, scope: `openid workspace:${workspace}` })
  if (res.status !== 200) throw new Error(`password token: ${res.status} ${res.text}`)
  return res.body.access_token as string
}

/** A client-credentials token for an existing service account (its client id and secret). */
export const clientCredentialsToken = async (node: Pick<TestNode, "baseUrl">, clientId: string, clientSecret: string) => {
  const res = await tokenRequest(node, { grant_type: "client_credentials", client_id: clientId, client_secret: clientSecret })
  if (res.status !== 200) throw new Error(`service token: ${res.status} ${res.text}`)
  return res.body.access_token as string
}

export interface CreatedAccount {
  readonly id: number
  readonly clientId: string
  readonly clientSecret: string
  readonly token: string
}

/** Creates a service account with `body` (name defaulted) and signs it in. */
export const createAccount = async (
  server: TestServer,
  ownerToken: string,
  body: Record<string, unknown>,
  workspace = server.workspace
): Promise<CreatedAccount> => {
  const res = await server.request("POST", `/workspace/${workspace}/api/v1/service-accounts`, {
    token: ownerToken,
    body: { name: `sa-${Math.random().toString(36).slice(2, 8)}`, ...body }
  })
  if (res.status !== 201) throw new Error(`create service account: ${res.status} ${res.text}`)
  const token = await clientCredentialsToken(server, res.body.clientId, res.body.clientSecret)
  return { id: res.body.id, clientId: res.body.clientId, clientSecret: res.body.clientSecret, token }
}

let counter = 0

/** Adds a new user with `role` to the workspace and signs them in. */
export const createUser = async (server: TestServer, ownerToken: string, role: string, workspace = server.workspace) => {
  const username = `user${++counter}-${Math.random().toString(36).slice(2, 8)}`
  const password = `pw-${Math.random().toString(36).slice(2)}-long`
  const res = await server.request("POST", `/workspace/${workspace}/api/v1/members`, {
    token: ownerToken,
    body: { username, password, role }
  })
  if (res.status !== 201) throw new Error(`add member: ${res.status} ${res.text}`)
  const token = await server.userToken(username, password, workspace)
  return { userId: res.body.userId as string, username, password, token }
}

export const claims = (token: string) => Jose.decodeJwt(token)
