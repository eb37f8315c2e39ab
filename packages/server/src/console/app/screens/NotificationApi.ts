// The console's calls to the notification service (`/notification/workspace/{ws}/api/v1`) and the shapes it reads.
import type { ApiClient } from "../lib/ApiClient.ts"

export interface NotificationMessage {
  readonly id: string
  readonly channel: "email" | "sms"
  readonly to: ReadonlyArray<string>
  readonly cc: ReadonlyArray<string>
  readonly bcc: ReadonlyArray<string>
  readonly from: string | null
  readonly subject: string | null
  readonly status: string
  readonly attempts: number
  readonly lastError: string | null
  readonly providerMessageId: string | null
  readonly templateName: string | null
  readonly templateVersion: number | null
  readonly nextAttemptAt: string | null
  readonly createdAt: string
  readonly sentAt: string | null
  readonly text?: string | null
  readonly html?: string | null
  readonly messageId?: string | null
}

export interface NotificationTemplate {
  readonly id: string
  readonly name: string
  readonly channel: "email" | "sms"
  readonly subject: string | null
  readonly text: string | null
  readonly html: string | null
  readonly variables: ReadonlyArray<string>
  readonly version: number
  readonly updatedAt: string
}

export interface Rendered {
  readonly subject: string | null
  readonly text: string | null
  readonly html: string | null
}

export interface ListOf<T> {
  readonly data: ReadonlyArray<T>
  readonly total: number
}

/** Calls relative to the notification base of the session's workspace. */
export const notificationApi = (api: ApiClient) => {
  const base = `/notification/workspace/${encodeURIComponent(api.workspace)}/api/v1`
  return {
    get: <T>(path: string, query?: Record<string, string | number | undefined>) =>
      api.call<T>("GET", `${base}${path}`, query === undefined ? {} : { query }),
    send: <T>(method: string, path: string, body?: unknown) => api.call<T>(method, `${base}${path}`, { body })
  }
}
