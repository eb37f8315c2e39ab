/**
 * A plain (Promise-based) Troupe client: openapi-fetch over the types generated from the server's OpenAPI document
 * (`schema.ts`). Workspace routes are addressed without their `/workspace/{workspace}/api/v1` prefix, the
 * workspace being fixed when the client is made:
 *
 * ```ts
 * const troupe = createTroupeClient({ baseUrl: "http://localhost:8080", workspace: "default", token })
 * const { data, error } = await troupe.GET("/records", { params: { query: { structureId: "books" } } })
 * const me = await troupe.root.GET("/health")
 * ```
 *
 * @since 0.1.0
 */
import createClient, { type Client, type Middleware } from "openapi-fetch"
import { subscribeEvents, type SubscribeOptions, type Subscription } from "./Realtime.ts"
import type { paths } from "./schema.ts"
import { type TokenInput, type TokenSource, toTokenSource } from "./TokenSource.ts"

/** The prefix every workspace route shares; `{workspace}` is filled by the client. @category models */
export type WorkspacePrefix = "/workspace/{workspace}/api/v1"

type WithoutWorkspace<Path> = [Exclude<keyof NonNullable<Path>, "workspace">] extends [never]
  ? { path?: never }
  : { path: Omit<NonNullable<Path>, "workspace"> }

/** An operation with the `workspace` path parameter removed. @category models */
export type DropWorkspace<Op> = Op extends { parameters: infer P extends { path?: unknown } }
  ? Omit<Op, "parameters"> & { parameters: Omit<P, "path"> & WithoutWorkspace<P["path"]> }
  : Op

/**
 * The workspace routes keyed by their path below `/workspace/{workspace}/api/v1` (`/records`, `/structures/{id}`),
 * without the `workspace` parameter.
 *
 * @category models
 */
export type WorkspacePaths = {
  [K in keyof paths as K extends `${WorkspacePrefix}${infer Rest}` ? Rest : never]: {
    [M in keyof paths[K]]: M extends "parameters" ? paths[K][M] : DropWorkspace<paths[K][M]>
  }
}

/** @category models */
export interface TroupeClientOptions {
  /** Troupe's origin, e.g. `http://localhost:8080` */
  readonly baseUrl: string
  /** the workspace slug every workspace route is sent to */
  readonly workspace: string
  /** a fixed bearer token */
  readonly token?: string | undefined
  /** asked before every request: a function answering a token, or a `TokenSource` (e.g. `clientCredentials`) */
  readonly tokenProvider?: Exclude<TokenInput, string> | undefined
  /** the fetch to use (default: the global one) */
  readonly fetch?: ((input: Request) => Promise<Response>) | undefined
  /** headers sent with every request */
  readonly headers?: Record<string, string> | undefined
}

/** @category models */
export type TroupeClient = Client<WorkspacePaths> & {
  readonly baseUrl: string
  readonly workspace: string
  /** routes outside the workspace (`/health`, `/oidc/token`, `/workspace/api/v1/workspaces`), same token */
  readonly root: Client<paths>
  readonly tokens: TokenSource | undefined
  /** the workspace's server-sent events (see `subscribeEvents`), with this client's token */
  readonly subscribe: (options: Omit<SubscribeOptions, "baseUrl" | "workspace" | "token">) => Subscription
  /**
   * Full-text search over the workspace's records (`GET /search` of the search service, docs/search.md): best match
   * first, with `<mark>` highlights. `structures` narrows to those slugs or ids.
   */
  readonly search: (query: SearchOptions) => ReturnType<typeof searchRoute>
}

/** What `search()` takes. @category models */
export interface SearchOptions {
  readonly q: string
  readonly structures?: ReadonlyArray<string> | string | undefined
  readonly limit?: number | undefined
  readonly offset?: number | undefined
}

const searchRoute = (root: Client<paths>, workspace: string, query: SearchOptions) =>
  root.GET("/search/workspace/{workspace}/api/v1/search", {
    params: {
      path: { workspace },
      query: {
        q: query.q,
        ...(query.structures === undefined
          ? {}
          : { structures: typeof query.structures === "string" ? query.structures : query.structures.join(",") }),
        ...(query.limit === undefined ? {} : { limit: String(query.limit) }),
        ...(query.offset === undefined ? {} : { offset: String(query.offset) })
      }
    }
  })

const authMiddleware = (tokens: TokenSource): Middleware => ({
  onRequest: async ({ request }) => {
    request.headers.set("authorization", `Bearer ${await tokens.getToken()}`)
    return request
  },
  onResponse: ({ response }) => {
    // a revoked or expired token: the next request asks the source for a new one
    if (response.status === 401) tokens.invalidate()
    return undefined
  }
})

/**
 * A client for one workspace of one Troupe server.
 *
 * @category constructors
 */
export const createTroupeClient = (options: TroupeClientOptions): TroupeClient => {
  const origin = options.baseUrl.replace(/\/+$/, "")
  const input = options.tokenProvider ?? options.token
  const tokens = input === undefined ? undefined : toTokenSource(input)
  const common = {
    ...(options.fetch === undefined ? {} : { fetch: options.fetch }),
    ...(options.headers === undefined ? {} : { headers: options.headers })
  }
  const api = createClient<WorkspacePaths>({
    baseUrl: `${origin}/workspace/${encodeURIComponent(options.workspace)}/api/v1`,
    ...common
  })
  const root = createClient<paths>({ baseUrl: origin, ...common })
  if (tokens !== undefined) {
    api.use(authMiddleware(tokens))
    root.use(authMiddleware(tokens))
  }
  return Object.assign(api, {
    baseUrl: origin,
    workspace: options.workspace,
    root,
    tokens,
    search: (query: SearchOptions) => searchRoute(root, options.workspace, query),
    subscribe: (sub: Omit<SubscribeOptions, "baseUrl" | "workspace" | "token">) => {
      if (tokens === undefined) throw new Error("subscribe needs a token: give the client `token` or `tokenProvider`")
      return subscribeEvents({ ...sub, baseUrl: origin, workspace: options.workspace, token: tokens })
    }
  })
}
