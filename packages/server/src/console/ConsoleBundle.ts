// The admin console's assets, bundled from its sources (app/) by esbuild. Nothing built is committed and there is
// no build step: the node bundles on the first request to /console and keeps the result for its life
// (ConsoleRoute.ts), so `npm install && npm start` serves the console as it is, a node that never serves it never
// pays for it, and a changed source is picked up by a restart. The files esbuild wrote are kept on disk
// (ConsoleCache.ts, under node_modules/.cache/troupe-console) with the list of the inputs they were made from: the
// next node, or the next start, serves them without starting esbuild while no input has changed.
import { Data, Effect } from "effect"
import * as Crypto from "node:crypto"
import * as Fs from "node:fs/promises"
import * as Path from "node:path"
import * as Zlib from "node:zlib"
import { type BuiltConsole, cacheDir, inputsKey, readCache, writeCache } from "./ConsoleCache.ts"

export class ConsoleBundleError extends Data.TaggedError("ConsoleBundleError")<{ readonly message: string }> {}

/** One file the console serves. */
export interface ConsoleAsset {
  readonly body: Uint8Array
  /** the same bytes gzipped, for clients that accept it */
  readonly gzip: Uint8Array
  readonly contentType: string
  readonly etag: string
}

export interface ConsoleBundle {
  /** index.html, naming the hashed assets */
  readonly index: ConsoleAsset
  /** by file name under /console/assets/ (content-hashed, so cacheable for ever) */
  readonly assets: ReadonlyMap<string, ConsoleAsset>
  /** how long it took to have the files (built, or read from the cache) */
  readonly buildMs: number
  readonly fromCache: boolean
}

export const appDir = Path.join(import.meta.dirname, "app")

const contentTypes: Record<string, string> = {
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".html": "text/html; charset=utf-8"
}

const asset = (body: Uint8Array, name: string): ConsoleAsset => ({
  body,
  gzip: Zlib.gzipSync(body, { level: 6 }),
  contentType: contentTypes[Path.extname(name)] ?? "application/octet-stream",
  etag: `"${Crypto.createHash("sha256").update(body).digest("base64url").slice(0, 22)}"`
})

const fail = (cause: unknown) =>
  new ConsoleBundleError({
    message: `bundling the console failed: ${cause instanceof Error ? cause.message : String(cause)}`
  })

/**
 * Bundles app/main.tsx (Preact, the shared schedule module) and, split off and loaded with the first code editor,
 * CodeMirror 6, into content-hashed JS and CSS files; minified, no source maps (a third of the build time). Gives
 * the files and every input read (absolute paths; this file too, for its options), for the cache.
 */
const build: Effect.Effect<BuiltConsole, ConsoleBundleError> = Effect.gen(function* () {
  // esbuild is loaded on first use only: nodes that never serve the console never start its process.
  const esbuild = yield* Effect.tryPromise({ try: () => import("esbuild"), catch: fail })
  const outdir = Path.join(appDir, "out")
  const result = yield* Effect.tryPromise({
    try: () =>
      esbuild.build({
        entryPoints: [Path.join(appDir, "main.tsx")],
        bundle: true,
        write: false,
        outdir,
        entryNames: "[name]-[hash]",
        chunkNames: "chunk-[hash]",
        format: "esm",
        splitting: true,
        target: "es2022",
        platform: "browser",
        minify: true,
        jsx: "automatic",
        jsxImportSource: "preact",
        legalComments: "none",
        logLevel: "silent",
        tsconfig: Path.join(appDir, "tsconfig.json"),
        define: { "process.env.NODE_ENV": '"production"' },
        metafile: true,
        absWorkingDir: appDir
      }),
    catch: fail
  })
  return {
    version: esbuild.version,
    files: result.outputFiles.map((f) => ({ name: Path.basename(f.path), contents: f.contents })),
    inputs: [
      import.meta.filename,
      Path.join(appDir, "index.html"),
      ...Object.keys(result.metafile.inputs).map((p) => Path.resolve(appDir, p))
    ]
  }
})

/** The bundle from the disk cache when its inputs are unchanged, else built (and cached) now. */
export const bundleConsole: Effect.Effect<ConsoleBundle, ConsoleBundleError> = Effect.gen(function* () {
  const start = performance.now()
  const dir = cacheDir(appDir)
  const version = yield* Effect.tryPromise({ try: () => import("esbuild").then((e) => e.version), catch: fail })
  const cached = yield* readCache(dir)
  // a cache made from another checkout's sources (a node_modules copied along with its .cache) is not this one's
  const fresh =
    cached !== undefined &&
    cached.version === version &&
    cached.inputs.some((input) => input.startsWith(`${appDir}${Path.sep}`)) &&
    (yield* inputsKey(cached.inputs)) === cached.key
  const built = fresh ? cached : yield* build
  if (!fresh) yield* writeCache(dir, built, yield* inputsKey(built.inputs))
  return yield* assemble(built, Math.round(performance.now() - start), fresh)
})

const assemble = (built: BuiltConsole, buildMs: number, fromCache: boolean) =>
  Effect.gen(function* () {
    const assets = new Map<string, ConsoleAsset>()
    let script: string | undefined
    let style: string | undefined
    for (const file of built.files) {
      const name = file.name
      assets.set(name, asset(file.contents, name))
      if (name.startsWith("main-") && name.endsWith(".js")) script = name
      if (name.startsWith("main-") && name.endsWith(".css")) style = name
    }
    if (script === undefined) return yield* fail("no script was produced")
    const template = yield* Effect.tryPromise({
      try: () => Fs.readFile(Path.join(appDir, "index.html"), "utf8"),
      catch: fail
    })
    const html = template
      .replace("<!--style-->", style === undefined ? "" : `<link rel="stylesheet" href="/console/assets/${style}">`)
      .replace("<!--script-->", `<script type="module" src="/console/assets/${script}"></script>`)
    const index = asset(new TextEncoder().encode(html), "index.html")
    return { index, assets, buildMs, fromCache } satisfies ConsoleBundle
  })
