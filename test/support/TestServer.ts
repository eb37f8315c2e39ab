// Starts real Troupe nodes as child processes (exactly what `npm start` runs) for end-to-end tests, each on its
// own free port and its own database: embedded PGlite in memory by default, or a fresh PostgreSQL database
// created for it when DATABASE_URL is set (so runs and test files never see each other's data).
import { type ChildProcess, spawn } from "node:child_process"
import * as Crypto from "node:crypto"
import * as Net from "node:net"
import * as Path from "node:path"
import postgres from "postgres"
import { passwordToken } from "./IdentityHelpers.ts"
import { sleep } from "./wait.ts"

const root = Path.resolve(import.meta.dirname, "../..")
const mainTs = Path.join(root, "packages/server/src/main.ts")

/** Ports this process handed out: the OS may offer a just-closed port again (a node's HTTP and runner ports collided). */
const handedOut = new Set<number>()

const anyFreePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const server = Net.createServer()
    server.unref()
    server.on("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const port = (server.address() as Net.AddressInfo).port
      server.close(() => resolve(port))
    })
  })

/** A free port not handed out before by this process. */
export const freePort = async (): Promise<number> => {
  for (;;) {
    const port = await anyFreePort()
    if (!handedOut.has(port)) {
      handedOut.add(port)
      return port
    }
  }
}

/** A fresh PostgreSQL database next to DATABASE_URL's; dropped by the returned function. */
export const freshDatabase = async (baseUrl: string) => {
  const name = `troupe_t_${Crypto.randomBytes(6).toString("hex")}`
  const admin = postgres(baseUrl, { max: 1, onnotice: () => {} })
  await admin.unsafe(`CREATE DATABASE ${name}`)
  await admin.end()
  const url = new URL(baseUrl)
  url.pathname = `/${name}`
  return {
    url: url.toString(),
    drop: async () => {
      const a = postgres(baseUrl, { max: 1, onnotice: () => {} })
      await a.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => {})
      await a.end()
    }
  }
}

export interface Response<T = any> {
  readonly status: number
  readonly headers: Headers
  readonly body: T
  readonly text: string
}

export interface RequestOptions {
  readonly token?: string | undefined
  readonly body?: unknown
  readonly headers?: Record<string, string>
  /** send `body` as this raw string instead of JSON */
  readonly raw?: string
}

export interface TestNode {
  readonly baseUrl: string
  readonly port: number
  readonly runnerPort: number
  readonly process: ChildProcess
  readonly output: () => string
  readonly request: <T = any>(method: string, path: string, options?: RequestOptions) => Promise<Response<T>>
  readonly stop: (signal?: NodeJS.Signals) => Promise<number | null>
}

export interface TestServer extends TestNode {
  readonly workspace: string
  readonly adminPassword: string
  /** DATABASE_URL the node uses (PostgreSQL runs only) */
  readonly databaseUrl: string | undefined
  /** `/workspace/<ws>/api/v1` */
  readonly base: string
  /** A user token for `admin` in the default workspace (cached). */
  readonly adminToken: () => Promise<string>
  /** A token for `username` in `workspace` (password grant). */
  readonly userToken: (username: string, password: string, workspace?: string) => Promise<string>
  /** Starts another node on the same database (PostgreSQL only). */
  readonly startPeer: (env?: Record<string, string>) => Promise<TestNode>
  /** Stops every node and drops the database. */
  readonly close: () => Promise<void>
}

export const request = async <T = any>(
  baseUrl: string,
  method: string,
  path: string,
  options: RequestOptions = {}
): Promise<Response<T>> => {
  const headers: Record<string, string> = { ...options.headers }
  if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`
  let body: string | undefined
  if (options.raw !== undefined) body = options.raw
  else if (options.body !== undefined) {
    body = JSON.stringify(options.body)
    headers["content-type"] ??= "application/json"
  }
  const res = await fetch(baseUrl + path, { method, headers, body: body ?? null })
  const text = await res.text()
  let parsed: unknown = text
  try {
    parsed = text.length > 0 ? JSON.parse(text) : undefined
  } catch {
    // not JSON: keep the text
  }
  return { status: res.status, headers: res.headers, body: parsed as T, text }
}

const waitHealthy = async (baseUrl: string, child: ChildProcess, output: () => string, timeoutMs = 180_000) => {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`troupe exited with ${child.exitCode}:\n${output()}`)
    try {
      const res = await fetch(`${baseUrl}/ready`)
      if (res.status === 200) return
    } catch {
      // not listening yet
    }
    await sleep(100)
  }
  throw new Error(`troupe did not become ready within ${timeoutMs} ms:\n${output()}`)
}

export const startNode = async (env: Record<string, string>): Promise<TestNode> => {
  const port = env.PORT ? Number(env.PORT) : await freePort()
  const runnerPort = env.TROUPE_RUNNER_PORT ? Number(env.TROUPE_RUNNER_PORT) : await freePort()
  let log = ""
  const child = spawn(
    process.execPath,
    ["--no-node-snapshot", "--experimental-strip-types", "--disable-warning=ExperimentalWarning", mainTs],
    {
      cwd: root,
      env: {
        ...process.env,
        TROUPE_LOG_LEVEL: "warn",
        ...env,
        PORT: String(port),
        TROUPE_RUNNER_PORT: String(runnerPort)
      },
      stdio: ["ignore", "pipe", "pipe"]
    }
  )
  child.stdout!.on("data", (d) => (log += d.toString()))
  child.stderr!.on("data", (d) => (log += d.toString()))
  const baseUrl = `http://127.0.0.1:${port}`
  const output = () => log
  await waitHealthy(baseUrl, child, output)
  return {
    baseUrl,
    port,
    runnerPort,
    process: child,
    output,
    request: (method, path, options) => request(baseUrl, method, path, options),
    stop: (signal = "SIGTERM") =>
      new Promise((resolve) => {
        // a child killed by a signal has signalCode set and exitCode null; its "exit" has fired already
        if (child.exitCode !== null || child.signalCode !== null) return resolve(child.exitCode)
        const timer = setTimeout(() => child.kill("SIGKILL"), 15_000)
        child.once("exit", (code) => {
          clearTimeout(timer)
          resolve(code)
        })
        child.kill(signal)
      })
  }
}

/**
 * Starts one node. With `clustered: true` (PostgreSQL only) the node joins a multi-node cluster and peers can be
 * added with `startPeer`.
 */
export const startServer = async (options: { env?: Record<string, string>; clustered?: boolean } = {}): Promise<TestServer> => {
  const adminPassword = `pw-${Crypto.randomBytes(8).toString("hex")}`
  const workspace = options.env?.TROUPE_WORKSPACE ?? "default"
  const pg = process.env.DATABASE_URL ? await freshDatabase(process.env.DATABASE_URL) : undefined
  const env: Record<string, string> = {
    TROUPE_ADMIN_PASSWORD: adminPassword,
    ...(pg ? { DATABASE_URL: pg.url } : { DATABASE_URL: "", TROUPE_DATA_DIR: "memory://" }),
    ...(options.clustered ? { TROUPE_RUNNER_HOST: "127.0.0.1" } : {}),
    ...options.env
  }
  const nodes: Array<TestNode> = []
  const first = await startNode(env).catch(async (e) => {
    await pg?.drop()
    throw e
  })
  nodes.push(first)
  const tokens = new Map<string, string>()
  const userToken = async (username: string, password: string, ws = workspace) => {
    const key = `${username}\u0000${password}\u0000${ws}`
    const cached = tokens.get(key)
    if (cached) return cached
    const token = await passwordToken(first, username, password, ws)
    tokens.set(key, token)
    return token
  }
  return {
    ...first,
    workspace,
    adminPassword,
    databaseUrl: pg?.url,
    base: `/workspace/${workspace}/api/v1`,
    adminToken: () => userToken("admin", adminPassword),
    userToken,
    startPeer: async (extra = {}) => {
      if (!pg) throw new Error("startPeer needs DATABASE_URL (PostgreSQL)")
      const node = await startNode({ ...env, ...extra })
      nodes.push(node)
      return node
    },
    close: async () => {
      await Promise.all(nodes.map((n) => n.stop()))
      await pg?.drop()
    }
  }
}
