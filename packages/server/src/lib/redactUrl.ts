// URLs as they may be logged: credentials in the query string (`?access_token=` of the SSE route, and any other
// parameter named like a credential) become REDACTED, as do userinfo parts; the rest is kept as sent.
import { UrlParams } from "effect/http"

/** Query parameter names whose values never reach a log line (matched case-insensitively). */
export const REDACTED_PARAMS: ReadonlyArray<string> = [
  "access_token",
  "refresh_token",
  "id_token",
  "token",
  "client_secret",
  "password",
  "secret",
  "api_key",
  "apikey",
  // Effect's defaults (signed cloud URLs)
  "X-Amz-Signature",
  "X-Amz-Credential",
  "X-Amz-Security-Token",
  "AWSAccessKeyId",
  "Signature",
  "sig",
  "X-Goog-Signature"
]

/** `url` (absolute or a path with a query) with credential values replaced by REDACTED. */
export const redactUrl = (url: string): string => UrlParams.redactUrl(url, REDACTED_PARAMS)
