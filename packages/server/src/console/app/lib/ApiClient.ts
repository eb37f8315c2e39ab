// The console's only way to the server: the public HTTP API with a bearer token in the Authorization header (never
// in a URL). Failures become ApiError, carrying the contract body's message, code and details.

export interface ErrorDetail {
  readonly field: string
  readonly message: string
}

/** A failed call: the contract error body, or what could be made of a response that had none. */
export class ApiError extends Error {
  constructor(
    message: string,
    readonly status: number,
    readonly code: string,
    readonly details: ReadonlyArray<ErrorDetail> = []
  ) {
    super(message)
  }
}

/** The ApiError of a response body (the contract's `{message, code, details}`, or OAuth's `{error_description}`). */
export const errorOf = (status: number, body: unknown, fallback: string): ApiError => {
  if (typeof body === "object" && body !== null) {
    const b = body as Record<string, unknown>
    const message = typeof b.message === "string" ? b.message : typeof b.error_description === "string" ? b.error_description : fallback
    const code = typeof b.code === "string" ? b.code : typeof b.error === "string" ? b.error : `HTTP_${status}`
    const details = Array.isArray(b.details)
      ? b.details.flatMap(
          (d): Array<ErrorDetail> =>
            typeof d === "object" && d !== null && typeof (d as ErrorDetail).message === "string"
              ? [{ field: String((d as ErrorDetail).field ?? ""), message: (d as ErrorDetail).message }]
              : []
        )
      : []
    return new ApiError(message, status, code, details)
  }
  return new ApiError(typeof body === "string" && body.length > 0 && body.length < 300 ? body : fallback, status, `HTTP_${status}`)
}

export type Query = Readonly<Record<string, string | number | boolean | undefined | null>>

export interface CallOptions {
  readonly query?: Query
  readonly body?: unknown
  readonly headers?: Readonly<Record<string, string>>
  readonly signal?: AbortSignal
}

export const queryString = (query: Query | undefined): string => {
  if (query === undefined) return ""
  const params = new URLSearchParams()
  for (const [key, value] of Object.entries(query)) {
    if (value !== undefined && value !== null && value !== "") params.set(key, String(value))
  }
  const text = params.toString()
  return text.length > 0 ? `?${text}` : ""
}

export interface ApiClient {
  /** `/workspace/{ws}/api/v1` */
  readonly base: string
  readonly workspace: string
  /** A call to an absolute path of the API (`/workspace/api/v1/workspaces`). */
  readonly call: <T>(method: string, path: string, options?: CallOptions) => Promise<T>
  /** Calls relative to the workspace base. */
  readonly get: <T>(path: string, query?: Query) => Promise<T>
  readonly post: <T>(path: string, body?: unknown, query?: Query) => Promise<T>
  readonly put: <T>(path: string, body?: unknown) => Promise<T>
  readonly patch: <T>(path: string, body?: unknown, query?: Query) => Promise<T>
  readonly del: <T>(path: string, query?: Query, body?: unknown) => Promise<T>
  /** The raw response of a workspace-relative or absolute GET, for streams (SSE). */
  readonly stream: (path: string, options: CallOptions) => Promise<Response>
  /** POSTs a multipart form to an absolute path with XMLHttpRequest, reporting the bytes sent (storage uploads). */
  readonly upload: <T>(path: string, form: FormData, onProgress: (loaded: number, total: number) => void) => Promise<T>
}

export interface ApiClientOptions {
  readonly origin: string
  readonly workspace: string
  readonly token: string
  /** Called on a 401: the token expired or was revoked. */
  readonly onUnauthorized?: () => void
  readonly fetch?: typeof fetch
}

interface UploadXhr {
  open(method: string, url: string): void
  setRequestHeader(name: string, value: string): void
  send(body: unknown): void
  readonly status: number
  readonly responseText: string
  readonly upload: { onprogress: ((e: { loaded: number; total: number; lengthComputable: boolean }) => void) | null }
  onload: (() => void) | null
  onerror: (() => void) | null
}

export const makeApiClient = (options: ApiClientOptions): ApiClient => {
  const base = `/workspace/${encodeURIComponent(options.workspace)}/api/v1`
  const doFetch = options.fetch ?? fetch
  const send = async (method: string, path: string, o: CallOptions = {}): Promise<Response> => {
    const headers: Record<string, string> = { authorization: `Bearer ${options.token}`, ...o.headers }
    let body: string | undefined
    if (o.body !== undefined) {
      body = JSON.stringify(o.body)
      headers["content-type"] = "application/json"
    }
    const init: RequestInit = { method, headers, cache: "no-store" }
    if (body !== undefined) init.body = body
    if (o.signal !== undefined) init.signal = o.signal
    let response: Response
    try {
      response = await doFetch(`${options.origin}${path}${queryString(o.query)}`, init)
    } catch (e) {
      if (e instanceof Error && e.name === "AbortError") throw e
      throw new ApiError("The server could not be reached", 0, "NETWORK_ERROR")
    }
    if (response.status === 401) options.onUnauthorized?.()
    return response
  }
  const call = async <T>(method: string, path: string, o: CallOptions = {}): Promise<T> => {
    const response = await send(method, path, o)
    const text = await response.text()
    let parsed: unknown = text
    try {
      parsed = text.length > 0 ? JSON.parse(text) : undefined
    } catch {
      // not JSON: keep the text
    }
    if (!response.ok) throw errorOf(response.status, parsed, `${method} ${path} failed with ${response.status}`)
    return parsed as T
  }
  const at = (path: string) =>
    path.startsWith("/workspace/") || path.startsWith("/realtime/") || path.startsWith("/storage/") ? path : base + path
  return {
    base,
    workspace: options.workspace,
    call,
    get: (path, query) => call("GET", at(path), query === undefined ? {} : { query }),
    post: (path, body, query) => call("POST", at(path), { body: body ?? {}, ...(query === undefined ? {} : { query }) }),
    put: (path, body) => call("PUT", at(path), { body: body ?? {} }),
    patch: (path, body, query) => call("PATCH", at(path), { body: body ?? {}, ...(query === undefined ? {} : { query }) }),
    del: (path, query, body) =>
      call("DELETE", at(path), { ...(query === undefined ? {} : { query }), ...(body === undefined ? {} : { body }) }),
    stream: (path, o) => send("GET", at(path), o),
    upload: <T>(path: string, form: FormData, onProgress: (loaded: number, total: number) => void) =>
      new Promise<T>((resolve, reject) => {
        // this file stays DOM-free (the node type-checks it too): the browser's XMLHttpRequest, as much as is used
        const Xhr = (globalThis as unknown as { XMLHttpRequest: new () => UploadXhr }).XMLHttpRequest
        const xhr = new Xhr()
        xhr.open("POST", `${options.origin}${path}`)
        xhr.setRequestHeader("authorization", `Bearer ${options.token}`)
        xhr.upload.onprogress = (e) => onProgress(e.loaded, e.lengthComputable ? e.total : 0)
        xhr.onload = () => {
          if (xhr.status === 401) options.onUnauthorized?.()
          let parsed: unknown = xhr.responseText
          try {
            parsed = xhr.responseText.length > 0 ? JSON.parse(xhr.responseText) : undefined
          } catch {
            // not JSON: keep the text
          }
          if (xhr.status >= 200 && xhr.status < 300) resolve(parsed as T)
          else reject(errorOf(xhr.status, parsed, `POST ${path} failed with ${xhr.status}`))
        }
        xhr.onerror = () => reject(new ApiError("The server could not be reached", 0, "NETWORK_ERROR"))
        xhr.send(form)
      })
  }
}

export interface TokenAnswer {
  readonly access_token: string
  readonly expires_in: number
  readonly scope: string
}

/** The password grant: a token for `workspace`. */
export const passwordToken = async (
  origin: string,
  username: string,
  password: string,
  workspace: string,
  doFetch: typeof fetch = fetch
): Promise<TokenAnswer> => {
  const body = new URLSearchParams({ grant_type: "password", username, password, scope: `openid workspace:${workspace}` })
  let response: Response
  try {
    response = await doFetch(`${origin}/oidc/token`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: body.toString(),
      cache: "no-store"
    })
  } catch {
    throw new ApiError("The server could not be reached", 0, "NETWORK_ERROR")
  }
  const text = await response.text()
  let parsed: unknown = text
  try {
    parsed = JSON.parse(text)
  } catch {
    // keep the text
  }
  if (!response.ok) throw errorOf(response.status, parsed, `Sign-in failed with ${response.status}`)
  return parsed as TokenAnswer
}
