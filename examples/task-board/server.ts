// The task board's own small web server: it bundles src/ with esbuild (in memory, at start) and serves the page and
// its two assets, nothing else. It is another origin than the Troupe node (another port), so the app reaches Troupe
// only through CORS: the node must allow this origin (TROUPE_CORS_ORIGINS, or the workspace's /settings/cors).
//
//   node --experimental-strip-types examples/task-board/server.ts      (or: npm run example)
//
// EXAMPLE_PORT (5173), EXAMPLE_HOST (127.0.0.1), TROUPE_URL (http://localhost:8080), TROUPE_WORKSPACE (default).
// test/browser-app.test.ts starts it with `startTaskBoard`.
import * as esbuild from "esbuild"
import * as Http from "node:http"
import type { AddressInfo } from "node:net"
import * as Path from "node:path"

export interface TaskBoardOptions {
  readonly troupeUrl: string
  readonly workspace: string
  readonly port?: number | undefined
  readonly host?: string | undefined
}

export interface TaskBoard {
  /** this server's origin, e.g. http://127.0.0.1:5173 */
  readonly url: string
  readonly close: () => Promise<void>
}

const here = import.meta.dirname

/** The app's script and style, bundled for browsers. */
const bundle = async () => {
  const result = await esbuild.build({
    entryPoints: [Path.join(here, "src/main.tsx")],
    bundle: true,
    write: false,
    outdir: Path.join(here, "out"),
    format: "esm",
    target: "es2022",
    platform: "browser",
    minify: true,
    jsx: "automatic",
    jsxImportSource: "preact",
    tsconfig: Path.join(here, "tsconfig.json"),
    logLevel: "silent"
  })
  const file = (ext: string) => result.outputFiles.find((f) => f.path.endsWith(ext))?.contents ?? new Uint8Array()
  return { js: file(".js"), css: file(".css") }
}

const attribute = (s: string) => s.replace(/[&<>"]/g, (c) => `&#${c.charCodeAt(0)};`)

const page = (options: TaskBoardOptions) => `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="troupe-url" content="${attribute(options.troupeUrl.replace(/\/+$/, ""))}">
<meta name="troupe-workspace" content="${attribute(options.workspace)}">
<title>Task board · Troupe</title>
<link rel="stylesheet" href="/main.css">
</head>
<body>
<div id="app"></div>
<script type="module" src="/main.js"></script>
</body>
</html>
`

/** Starts the board's server; resolves once it listens. */
export const startTaskBoard = async (options: TaskBoardOptions): Promise<TaskBoard> => {
  const { js, css } = await bundle()
  const html = page(options)
  const files: Record<string, readonly [string, string | Uint8Array]> = {
    "/": ["text/html; charset=utf-8", html],
    "/main.js": ["text/javascript; charset=utf-8", js],
    "/main.css": ["text/css; charset=utf-8", css]
  }
  const server = Http.createServer((req, res) => {
    const file = files[(req.url ?? "/").split("?")[0]!]
    if (file === undefined || (req.method !== "GET" && req.method !== "HEAD")) {
      res.writeHead(404, { "content-type": "text/plain" }).end("not found")
      return
    }
    res.writeHead(200, {
      "content-type": file[0],
      "cache-control": "no-cache",
      // the page's scripts and styles come from here; its API calls go to Troupe only
      "content-security-policy": `default-src 'self'; connect-src 'self' ${options.troupeUrl.replace(/\/+$/, "")}`
    })
    res.end(req.method === "HEAD" ? undefined : file[1])
  })
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject)
    server.listen(options.port ?? 5173, options.host ?? "127.0.0.1", () => resolve())
  })
  const address = server.address() as AddressInfo
  const host = address.family === "IPv6" ? `[${address.address}]` : address.address
  return {
    url: `http://${host}:${address.port}`,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      })
  }
}

if (import.meta.main) {
  const troupeUrl = process.env.TROUPE_URL ?? "http://localhost:8080"
  const board = await startTaskBoard({
    troupeUrl,
    workspace: process.env.TROUPE_WORKSPACE ?? "default",
    port: Number(process.env.EXAMPLE_PORT ?? 5173),
    host: process.env.EXAMPLE_HOST ?? "127.0.0.1"
  })
  const shown = board.url.replace("127.0.0.1", "localhost")
  console.log(`task board on ${shown}, calling Troupe at ${troupeUrl}`)
  console.log(`the node must allow this origin: TROUPE_CORS_ORIGINS=${shown} (or PUT /settings/cors)`)
}
