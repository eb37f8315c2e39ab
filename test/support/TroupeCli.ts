// The `troupe` CLI run as a child process (packages/cli/bin/troupe.mjs) against a test node, with its session from
// TROUPE_URL/TROUPE_WORKSPACE/TROUPE_TOKEN and its config file where the test says (no TROUPE_* of the caller leaks in).
import { spawn } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { afterAll, beforeAll } from "vitest"
import { startServer, type TestServer } from "./TestServer.ts"

const root = Path.resolve(import.meta.dirname, "../..")
const bin = Path.join(root, "packages/cli/bin/troupe.mjs")

export interface CliRun {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

export interface CliSession {
  readonly url: string
  readonly workspace: string
  readonly token: string
  /** TROUPE_CONFIG: a file of the test's own */
  readonly config: string
}

export const runTroupe = (session: CliSession, args: ReadonlyArray<string>) =>
  new Promise<CliRun>((resolve, reject) => {
    const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("TROUPE_")))
    const child = spawn(process.execPath, [bin, ...args], {
      cwd: root,
      env: {
        ...env,
        TROUPE_CONFIG: session.config,
        TROUPE_URL: session.url,
        TROUPE_WORKSPACE: session.workspace,
        TROUPE_TOKEN: session.token
      },
      stdio: ["ignore", "pipe", "pipe"]
    })
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (d) => (stdout += d))
    child.stderr.on("data", (d) => (stderr += d))
    child.on("error", reject)
    child.on("close", (code) => resolve({ code, stdout, stderr }))
  })

/**
 * For a `describe` of CLI tests: a test node, the admin's token and a work directory for the CLI's config, made
 * before its tests and removed after; `troupe(args)` runs the CLI against that node as the admin.
 */
export const cliFixture = (name: string) => {
  const fixture = { server: undefined as unknown as TestServer, token: "", work: "" }
  beforeAll(async () => {
    fixture.work = Fs.mkdtempSync(Path.join(Os.tmpdir(), `troupe-cli-${name}-`))
    fixture.server = await startServer()
    fixture.token = await fixture.server.adminToken()
  }, 60_000)
  afterAll(async () => {
    await fixture.server?.close()
    Fs.rmSync(fixture.work, { recursive: true, force: true })
  })
  const troupe = (args: ReadonlyArray<string>) =>
    runTroupe(
      {
        url: fixture.server.baseUrl,
        workspace: fixture.server.workspace,
        token: fixture.token,
        config: Path.join(fixture.work, "config.json")
      },
      args
    )
  return { fixture, troupe }
}
