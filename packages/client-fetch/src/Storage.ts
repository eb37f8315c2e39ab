/**
 * Files of the storage service (CONTRACT §8.1, docs/storage.md) from Node and browsers: `uploadFile` sends a
 * multipart body with the `file` part (with upload progress through XMLHttpRequest where there is one, else
 * `fetch`), `downloadFile` answers the `Response` so its body can be streamed (a `Range` may be given), and
 * `signedUrl` asks for a URL that downloads without a token. The other routes (list, metadata, PATCH, DELETE,
 * usage) are typed calls of `createTroupeClient`'s `root` client under `/storage/workspace/{workspace}/api/v1`.
 *
 * ```ts
 * const file = await uploadFile({ baseUrl, workspace: "default", token, file: input.files[0], folder: "avatars" })
 * const res = await downloadFile({ baseUrl, workspace: "default", token, id: file.id })
 * ```
 *
 * @since 0.1.0
 */
import type { components } from "./schema.ts"
import { type Progress, sendWithProgress } from "./Progress.ts"
import { type TokenInput, toTokenSource } from "./TokenSource.ts"

/** A stored file's metadata. @category models */
export type StoredFile = components["schemas"]["StoredFile"]

/** Where the storage service is and who calls it. @category models */
export interface StorageTarget {
  readonly baseUrl: string
  readonly workspace: string
  readonly token?: TokenInput | undefined
}

/** @category models */
export interface UploadOptions extends StorageTarget {
  /** the bytes: a Blob or File (in Node 20+, `new Blob([buffer])` or `await fs.openAsBlob(path)`) */
  readonly file: Blob
  /** the stored name (default: the File's name, else "file") */
  readonly name?: string | undefined
  readonly folder?: string | undefined
  readonly metadata?: Readonly<Record<string, unknown>> | undefined
  /** called as the body is sent (browsers; in Node once at the end) */
  readonly onProgress?: ((progress: Progress) => void) | undefined
  readonly signal?: AbortSignal | undefined
}

/** A failed storage call: the contract's error body. @category errors */
export class StorageError extends Error {
  readonly status: number
  readonly code: string
  readonly details: ReadonlyArray<unknown>
  constructor(status: number, body: { code?: string; message?: string; details?: ReadonlyArray<unknown> } | undefined) {
    super(body?.message ?? `storage call failed with ${status}`)
    this.name = "StorageError"
    this.status = status
    this.code = body?.code ?? "INTERNAL"
    this.details = body?.details ?? []
  }
}

/** The storage base of a workspace. @category constructors */
export const storageBase = (target: Pick<StorageTarget, "baseUrl" | "workspace">) =>
  `${target.baseUrl.replace(/\/+$/, "")}/storage/workspace/${encodeURIComponent(target.workspace)}/api/v1`

const authHeaders = async (token: TokenInput | undefined): Promise<Record<string, string>> => {
  if (token === undefined) return {}
  return { authorization: `Bearer ${await toTokenSource(token).getToken()}` }
}

/** Uploads one file; resolves its metadata, rejects with a StorageError. @category constructors */
export const uploadFile = async (options: UploadOptions): Promise<StoredFile> => {
  const form = new FormData()
  // fields before the file: the server reads them before the bytes arrive
  if (options.folder !== undefined) form.append("folder", options.folder)
  if (options.name !== undefined) form.append("name", options.name)
  if (options.metadata !== undefined) form.append("metadata", JSON.stringify(options.metadata))
  const fileName = options.name ?? ((options.file as { name?: string }).name || "file")
  form.append("file", options.file, fileName)
  const url = `${storageBase(options)}/upload`
  if ((globalThis as { XMLHttpRequest?: unknown }).XMLHttpRequest !== undefined) {
    const res = await sendWithProgress<StoredFile>({
      url,
      method: "POST",
      body: form,
      token: options.token,
      onProgress: options.onProgress,
      signal: options.signal
    })
    if (res.status !== 201 || res.data === undefined) throw new StorageError(res.status, res.error)
    return res.data
  }
  const res = await fetch(url, { method: "POST", headers: await authHeaders(options.token), body: form, signal: options.signal ?? null })
  const body = (await res.json().catch(() => undefined)) as any
  if (res.status !== 201) throw new StorageError(res.status, body)
  options.onProgress?.({ loaded: options.file.size, total: options.file.size })
  return body as StoredFile
}

/** @category models */
export interface DownloadOptions extends StorageTarget {
  readonly id: string
  /** e.g. "bytes=0-1023" (answers 206) */
  readonly range?: string | undefined
  /** Content-Disposition: attachment */
  readonly attachment?: boolean | undefined
  /** Images: a resized variant, each size one of the server's TROUPE_STORAGE_IMAGE_SIZES */
  readonly width?: number | undefined
  readonly height?: number | undefined
  /** With width and height: "cover" (the server's default), "contain", "fill", "inside" or "outside" */
  readonly fit?: "cover" | "contain" | "fill" | "inside" | "outside" | undefined
  readonly signal?: AbortSignal | undefined
}

/** The file's bytes as a streaming Response (200 or 206); rejects with a StorageError. @category constructors */
export const downloadFile = async (options: DownloadOptions): Promise<Response> => {
  const headers = await authHeaders(options.token)
  if (options.range !== undefined) headers.range = options.range
  const params = new URLSearchParams()
  if (options.attachment) params.set("download", "true")
  for (const key of ["width", "height", "fit"] as const) if (options[key] !== undefined) params.set(key, String(options[key]))
  const query = params.toString() === "" ? "" : `?${params}`
  const res = await fetch(`${storageBase(options)}/files/${encodeURIComponent(options.id)}${query}`, {
    headers,
    signal: options.signal ?? null
  })
  if (res.status !== 200 && res.status !== 206) throw new StorageError(res.status, (await res.json().catch(() => undefined)) as any)
  return res
}

/** A URL that downloads the file without a token until `expiresAt`. @category constructors */
export const signedUrl = async (options: StorageTarget & { readonly id: string; readonly expiresIn?: number | undefined }) => {
  const res = await fetch(`${storageBase(options)}/files/${encodeURIComponent(options.id)}/signed-url`, {
    method: "POST",
    headers: { ...(await authHeaders(options.token)), "content-type": "application/json" },
    body: JSON.stringify(options.expiresIn === undefined ? {} : { expiresIn: options.expiresIn })
  })
  const body = (await res.json().catch(() => undefined)) as any
  if (res.status !== 200) throw new StorageError(res.status, body)
  return body as { url: string; expiresAt: string }
}
