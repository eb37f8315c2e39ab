// GET /console (and /console/*): the admin console, served by every node. A raw route (not HttpApi): it serves
// files, not the API. The page is a static shell; everything it shows comes from the public API with the signed-in
// user's bearer token, so the console can do nothing the API would not let that user do.
// - /console, /console/ and any /console/<path> that is not an asset: index.html (the app routes by the hash).
// - /console/assets/<name>-<hash>.(js|css): the bundle, cacheable for ever (the name changes with the content),
//   gzipped for clients that accept it.
// The bundle is made (or read from its disk cache) on the first request and kept (ConsoleBundle.ts).
import { notFound } from "@troupe/api/Errors"
import { Effect } from "effect"
import { HttpRouter, type HttpServerRequest, HttpServerResponse } from "effect/http"
import { type ConsoleAsset, bundleConsole } from "./ConsoleBundle.ts"

/** The console's paths, for the edge's 405 and route labels. */
export const CONSOLE_PATHS = ["/console", "/console/*"] as const

/** Scripts and styles from this origin only, API calls to this origin only, never framed. CodeMirror injects its
 * styles at run time, hence 'unsafe-inline' for styles (not for scripts). */
const contentSecurityPolicy = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "frame-ancestors 'none'",
  "form-action 'none'"
].join("; ")

const pageHeaders = {
  "cache-control": "no-cache",
  "content-security-policy": contentSecurityPolicy,
  "x-content-type-options": "nosniff",
  "x-frame-options": "DENY",
  "referrer-policy": "no-referrer"
}

const assetHeaders = {
  "cache-control": "public, max-age=31536000, immutable",
  "x-content-type-options": "nosniff"
}

const respond = (request: HttpServerRequest.HttpServerRequest, file: ConsoleAsset, headers: Record<string, string>) => {
  const all = { ...headers, etag: file.etag, vary: "accept-encoding" }
  if (request.headers["if-none-match"] === file.etag) return HttpServerResponse.empty({ status: 304, headers: all })
  return /\bgzip\b/.test(request.headers["accept-encoding"] ?? "")
    ? HttpServerResponse.uint8Array(file.gzip, {
        contentType: file.contentType,
        headers: { ...all, "content-encoding": "gzip" }
      })
    : HttpServerResponse.uint8Array(file.body, { contentType: file.contentType, headers: all })
}

export const ConsoleRoute = HttpRouter.use((router) =>
  Effect.gen(function* () {
    const bundle = yield* Effect.cached(
      bundleConsole.pipe(
        Effect.tap((b) => Effect.logDebug("console bundled", { buildMs: b.buildMs, fromCache: b.fromCache, assets: [...b.assets.keys()] })),
        Effect.orDie
      )
    )
    const handler = (request: HttpServerRequest.HttpServerRequest) =>
      Effect.gen(function* () {
        const { index, assets } = yield* bundle
        const path = new URL(request.url, "http://localhost").pathname
        if (!path.startsWith("/console/assets/")) return respond(request, index, pageHeaders)
        const file = assets.get(path.slice("/console/assets/".length))
        if (file === undefined) return yield* notFound(`No console asset ${path}`)
        return respond(request, file, assetHeaders)
      })
    // one registration: the router's `/console/*` also answers `/console` and `/console/` (adding both is refused)
    yield* router.add("GET", "/console/*", handler)
  })
)
