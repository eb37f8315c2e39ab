/**
 * Requests whose upload reports its progress, in browsers: `fetch` cannot tell how much of a body has been sent,
 * `XMLHttpRequest` can (`upload.onprogress`). This is the seam the storage service's upload helper builds on
 * (`POST /storage/workspace/{ws}/api/v1/upload` with a `FormData` holding the `file` part, CONTRACT §8.1): it
 * sends any body with the client's token and answers the parsed JSON body, as the other calls do.
 *
 * ```ts
 * const form = new FormData()
 * form.append("file", input.files[0])
 * const { status, data } = await sendWithProgress({
 *   url: `${baseUrl}/storage/workspace/${workspace}/api/v1/upload`, method: "POST", body: form, token: session,
 *   onProgress: ({ loaded, total }) => (bar.value = total ? loaded / total : 0)
 * })
 * ```
 *
 * @since 0.1.0
 */
import { type TokenInput, toTokenSource } from "./TokenSource.ts"

/** How much of a request's body has been sent. @category models */
export interface Progress {
  readonly loaded: number
  /** undefined when the browser cannot tell the body's length */
  readonly total: number | undefined
}

/** @category models */
export interface ProgressRequest {
  readonly url: string
  readonly method?: string | undefined
  /** a FormData, Blob, ArrayBuffer or string, as `XMLHttpRequest.send` takes it */
  readonly body?: unknown
  readonly headers?: Readonly<Record<string, string>> | undefined
  readonly token?: TokenInput | undefined
  readonly onProgress?: ((progress: Progress) => void) | undefined
  readonly signal?: AbortSignal | undefined
}

/** The answer: its status, its parsed JSON body (`error` when it is one of the contract's error bodies). @category models */
export interface ProgressResponse<A = unknown> {
  readonly status: number
  readonly data: A | undefined
  readonly error: { readonly code: string; readonly message: string; readonly details: ReadonlyArray<unknown> } | undefined
  readonly headers: (name: string) => string | null
}

interface Xhr {
  open(method: string, url: string): void
  setRequestHeader(name: string, value: string): void
  send(body?: unknown): void
  abort(): void
  getResponseHeader(name: string): string | null
  readonly status: number
  readonly responseText: string
  readonly upload: { onprogress: ((e: { loaded: number; total: number; lengthComputable: boolean }) => void) | null }
  onload: (() => void) | null
  onerror: (() => void) | null
  onabort: (() => void) | null
}

/**
 * Sends one request with `XMLHttpRequest`, reporting the upload's progress. Rejects on a network error (in a
 * browser, also a call refused by CORS) or an abort; a 401 makes the token source forget its token.
 *
 * @category constructors
 */
export const sendWithProgress = async <A = unknown>(request: ProgressRequest): Promise<ProgressResponse<A>> => {
  const Request = (globalThis as { XMLHttpRequest?: new () => Xhr }).XMLHttpRequest
  if (Request === undefined) throw new Error("sendWithProgress needs XMLHttpRequest (a browser)")
  const tokens = request.token === undefined ? undefined : toTokenSource(request.token)
  const token = tokens === undefined ? undefined : await tokens.getToken()
  return new Promise((resolve, reject) => {
    const xhr = new Request()
    xhr.open(request.method ?? "POST", request.url)
    for (const [name, value] of Object.entries(request.headers ?? {})) xhr.setRequestHeader(name, value)
    if (token !== undefined) xhr.setRequestHeader("authorization", `Bearer ${token}`)
    xhr.upload.onprogress = (e) => request.onProgress?.({ loaded: e.loaded, total: e.lengthComputable ? e.total : undefined })
    xhr.onload = () => {
      if (xhr.status === 401) tokens?.invalidate()
      let parsed: any
      try {
        parsed = xhr.responseText === "" ? undefined : JSON.parse(xhr.responseText)
      } catch {
        parsed = undefined
      }
      const failed = xhr.status >= 400 && parsed !== null && typeof parsed === "object" && typeof parsed.code === "string"
      resolve({
        status: xhr.status,
        data: failed ? undefined : parsed,
        error: failed ? parsed : undefined,
        headers: (name) => xhr.getResponseHeader(name)
      })
    }
    xhr.onerror = () => reject(new TypeError(`network error: ${request.method ?? "POST"} ${request.url}`))
    xhr.onabort = () => reject(new DOMException("The request was aborted", "AbortError"))
    request.signal?.addEventListener("abort", () => xhr.abort(), { once: true })
    xhr.send(request.body)
  })
}
