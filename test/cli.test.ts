// `troupe` end to end: every command run as a child process (exactly what a user runs: bin/troupe.mjs) against a
// real node, checking exit codes, stdout/--json, stderr and what the server holds afterwards.
import { PGlite } from "@electric-sql/pglite"
import { spawn } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import postgres from "postgres"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startCuttingProxy } from "./support/CuttingProxy.ts"
import { freshDatabase, startServer, type TestServer } from "./support/TestServer.ts"
import { until } from "./support/wait.ts"

const root = Path.resolve(import.meta.dirname, "..")
const bin = Path.join(root, "packages/cli/bin/troupe.mjs")
const tsc = Path.join(root, "node_modules/typescript/bin/tsc")

interface Run {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

const clean = Object.fromEntries(
  Object.entries(process.env).filter(
    ([k]) => !["TROUPE_URL", "TROUPE_WORKSPACE", "TROUPE_TOKEN", "TROUPE_PASSWORD", "TROUPE_CLIENT_SECRET"].includes(k)
  )
)

const exec = (
  command: string,
  args: ReadonlyArray<string>,
  options: { env?: Record<string, string | undefined>; input?: string; cwd?: string } = {}
) =>
  new Promise<Run>((resolve, reject) => {
    const child = spawn(command, args, {
      cwd: options.cwd ?? root,
      env: { ...clean, ...options.env } as NodeJS.ProcessEnv,
      stdio: ["pipe", "pipe", "pipe"]
    })
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (d) => (stdout += d))
    child.stderr.on("data", (d) => (stderr += d))
    child.on("error", reject)
    child.on("close", (code) => resolve({ code, stdout, stderr }))
    child.stdin.end(options.input ?? "")
  })

describe("troupe CLI", { timeout: 240_000 }, () => {
  let server: TestServer
  let work: string
  let dataDir: string
  const config = () => Path.join(work, "config", "config.json")
  const troupe = (args: ReadonlyArray<string>, options: { env?: Record<string, string | undefined>; input?: string } = {}) =>
    exec(process.execPath, [bin, ...args], { ...options, env: { TROUPE_CONFIG: config(), ...options.env } })
  const api = async (method: string, path: string, body?: unknown) => {
    const res = await server.request(method, `${server.base}${path}`, { token: await server.adminToken(), body })
    return res
  }

  beforeAll(async () => {
    work = Fs.mkdtempSync(Path.join(Os.tmpdir(), "troupe-cli-"))
    dataDir = Path.join(work, "data")
    // on PGlite a data directory on disk, so that backup/restore have something to copy at the end
    server = await startServer({ env: { TROUPE_DATA_DIR: dataDir } })
  })
  afterAll(async () => {
    await server?.close()
    Fs.rmSync(work, { recursive: true, force: true })
  })

  it("prints help (0), refuses bad usage (2) and says when it is not logged in (1)", async () => {
    const [help, pushHelp, backupHelp, bogus, whoami] = await Promise.all([
      troupe(["--help"]),
      troupe(["structures", "push", "--help"]),
      troupe(["backup", "--help"]),
      troupe(["login", "--bogus"]),
      troupe(["whoami", "--json"])
    ])
    expect(help.code).toBe(0)
    for (const command of ["login", "types", "structures", "export", "import", "functions", "runs", "backup", "restore"]) {
      expect(help.stdout).toContain(command)
    }
    expect(pushHelp.code).toBe(0)
    expect(pushHelp.stdout).toContain("push never deletes")
    expect(backupHelp.stdout).toContain("STOP THE NODE")
    expect(backupHelp.stdout).toContain("What a backup holds")
    expect(bogus.code).toBe(2)
    expect(bogus.stderr).toContain("--bogus")
    expect(whoami.code).toBe(1)
    expect(JSON.parse(whoami.stderr).error.message).toContain("not logged in")
  })

  it("logs in with a password from stdin (config mode 600) and with client credentials", async () => {
    const wrong = await troupe(["login", "--url", server.baseUrl, "--workspace", "default", "--username", "admin"], {
      input: "not-the-password\n"
    })
    expect(wrong.code).toBe(1)
    expect(wrong.stderr).toContain("401")
    expect(Fs.existsSync(config())).toBe(false)

    const noPassword = await troupe(["login", "--url", server.baseUrl, "--username", "admin"], { input: "" })
    expect(noPassword.code).toBe(2)

    const ok = await troupe(["login", "--url", server.baseUrl, "--workspace", "default", "--username", "admin", "--json"], {
      input: `${server.adminPassword}\n`
    })
    expect(ok.code).toBe(0)
    expect(JSON.parse(ok.stdout)).toMatchObject({ workspace: "default", grant: "password", me: { name: "admin" } })
    expect(Fs.statSync(config()).mode & 0o777).toBe(0o600)
    expect(Fs.statSync(Path.dirname(config())).mode & 0o777).toBe(0o700)

    const account = await api("POST", "/service-accounts", { name: "cli-ci", role: "developer" })
    expect(account.status).toBe(201)
    const ciConfig = Path.join(work, "ci", "config.json")
    const ci = await troupe(["login", "--url", server.baseUrl, "--client-id", account.body.clientId, "--json"], {
      env: { TROUPE_CONFIG: ciConfig, TROUPE_CLIENT_SECRET: account.body.clientSecret }
    })
    expect(ci.code).toBe(0)
    // the workspace comes from the token when --workspace is not given
    expect(JSON.parse(ci.stdout)).toMatchObject({ workspace: "default", grant: "client_credentials" })
    const who = await troupe(["whoami", "--json"], { env: { TROUPE_CONFIG: ciConfig } })
    expect(who.code).toBe(0)
    expect(JSON.stringify(JSON.parse(who.stdout).me)).toContain(account.body.clientId)
  })

  it("pushes structure files (diff first), pulls them back, and writes TypeScript types that compile", async () => {
    const dir = Path.join(work, "structures")
    Fs.mkdirSync(dir)
    Fs.writeFileSync(
      Path.join(dir, "reviews.json"),
      JSON.stringify({
        name: "Reviews",
        properties: [
          { name: "book", type: "reference", target: "books", relationship: "many-to-one", onDelete: "cascade" },
          { name: "stars", type: "number", integer: true, enum: [1, 2, 3, 4, 5], required: true }
        ]
      })
    )
    Fs.writeFileSync(
      Path.join(dir, "books.json"),
      JSON.stringify({
        name: "Books",
        recordSlug: "books",
        properties: [
          { name: "title", type: "string", required: true },
          { name: "pages", type: "number", minimum: 1 },
          { name: "tags", type: "array", items: { type: "string" } }
        ]
      })
    )
    const dry = await troupe(["structures", "push", "--dir", dir])
    expect(dry.code).toBe(0)
    expect(dry.stdout).toContain("+ structure books")
    expect(dry.stdout).toContain("Not applied")
    expect((await api("GET", "/structures/slug/books")).status).toBe(404)

    const applied = await troupe(["structures", "push", "--dir", dir, "--yes", "--json"])
    expect(applied.code).toBe(0)
    const report = JSON.parse(applied.stdout)
    expect(report.applied).toBe(true)
    // books first: reviews references it
    expect(report.plans.map((p: any) => [p.recordSlug, p.action])).toEqual([
      ["books", "create"],
      ["reviews", "create"]
    ])
    expect((await api("GET", "/structures/slug/reviews")).status).toBe(200)

    const pulled = Path.join(work, "pulled")
    const pull = await troupe(["structures", "pull", "--dir", pulled])
    expect(pull.code).toBe(0)
    const books = JSON.parse(Fs.readFileSync(Path.join(pulled, "books.json"), "utf8"))
    expect(books).not.toHaveProperty("id")
    expect(books.properties[0].id).toEqual(expect.any(String))
    const same = await troupe(["structures", "push", "--dir", pulled])
    expect(same.stdout).toContain("Nothing to push")

    books.properties.find((p: any) => p.name === "pages").maximum = 5000
    books.properties.push({ name: "author", type: "string" })
    Fs.writeFileSync(Path.join(pulled, "books.json"), JSON.stringify(books, null, 2))
    const update = await troupe(["structures", "push", "--dir", pulled, "--yes"])
    expect(update.code).toBe(0)
    expect(update.stdout).toContain("~ property pages.maximum: (none) -> 5000")
    expect(update.stdout).toContain("+ property author (string)")
    const stored = (await api("GET", "/structures/slug/books")).body
    expect(stored.properties.map((p: any) => p.name)).toEqual(["title", "pages", "tags", "author"])

    const typesFile = Path.join(work, "app", "troupe-types.ts")
    const types = await troupe(["types", "--out", typesFile, "--json-schema", Path.join(work, "app", "schemas.json")])
    expect(types.code).toBe(0)
    const text = Fs.readFileSync(typesFile, "utf8")
    expect(text).toContain("export interface Books {")
    expect(text).toContain("  stars: 1 | 2 | 3 | 4 | 5\n")
    const schemas = JSON.parse(Fs.readFileSync(Path.join(work, "app", "schemas.json"), "utf8"))
    expect(schemas.books.required).toEqual(["title"])
    Fs.writeFileSync(
      Path.join(work, "app", "app.ts"),
      [
        `import type { Books, Reviews, TroupeRecord, TroupeStructures } from "./troupe-types.ts"`,
        `export const book: Books = { title: "Dune", pages: 412, tags: ["scifi"] }`,
        `export const review: TroupeStructures["reviews"] = { stars: 5, book: "00000000-0000-0000-0000-000000000000" }`,
        `export const record = (r: TroupeRecord<Reviews>): number => r.data.stars`,
        `// @ts-expect-error title is required`,
        `export const bad: Books = { pages: 1 }`,
        ``
      ].join("\n")
    )
    const check = await exec(
      process.execPath,
      [tsc, "--noEmit", "--strict", "--allowImportingTsExtensions", "--target", "es2022", "--module", "nodenext", "--types", "", "app.ts"],
      {
        cwd: Path.join(work, "app")
      }
    )
    expect(check.stdout + check.stderr).toBe("")
    expect(check.code).toBe(0)
  })

  it("exports records as JSONL (resuming where a state file says) and imports them into another workspace", async () => {
    const bulk = await api("POST", "/records/bulk", {
      structureId: "books",
      records: Array.from({ length: 250 }, (_, i) => ({ data: { title: `Book ${i}`, pages: i + 1 } }))
    })
    expect(bulk.status).toBe(201)
    const ex = Path.join(work, "export")
    const first = await troupe(["export", "--dir", ex, "--structure", "books", "--json"])
    expect(first.code).toBe(0)
    expect(JSON.parse(first.stdout).structures).toEqual([
      { structure: "books", file: Path.join(ex, "books.jsonl"), records: 250, resumed: false }
    ])
    expect(first.stderr).toContain("export books: 100 records")
    const file = Path.join(ex, "books.jsonl")
    const full = Fs.readFileSync(file, "utf8")
    const ids = full
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l).id)
    expect(new Set(ids).size).toBe(250)

    // as if the export had died after page 1 and in the middle of writing page 2
    const page1 = await api("GET", "/records?structureId=books&limit=100")
    const bytes = Buffer.byteLength(`${full.split("\n").slice(0, 100).join("\n")}\n`)
    Fs.writeFileSync(
      Path.join(ex, ".troupe-export-state.json"),
      JSON.stringify({
        version: 1,
        url: server.baseUrl,
        workspace: "default",
        structures: { books: { cursor: page1.body.pagination.nextCursor, count: 100, bytes, done: false } }
      })
    )
    Fs.appendFileSync(file, '{"id":"half-written')
    const resumed = await troupe(["export", "--dir", ex, "--structure", "books"])
    expect(resumed.code).toBe(0)
    expect(Fs.readFileSync(file, "utf8")).toBe(full)

    // a second workspace, its structures pushed from the files, then the records
    expect(
      (
        await server.request("POST", "/workspace/api/v1/workspaces", {
          token: await server.adminToken(),
          body: { slug: "copy", name: "Copy" }
        })
      ).status
    ).toBe(201)
    const copy = { TROUPE_CONFIG: Path.join(work, "copy", "config.json") }
    expect(
      (
        await troupe(["login", "--url", server.baseUrl, "-w", "copy", "-u", "admin"], {
          env: copy,
          input: server.adminPassword
        })
      ).code
    ).toBe(0)
    const missing = await troupe(["import", "--dir", ex], { env: copy })
    expect(missing.code).toBe(1)
    expect(missing.stderr).toContain("troupe structures push")
    expect((await troupe(["structures", "push", "--dir", Path.join(work, "pulled"), "--yes"], { env: copy })).code).toBe(0)
    const imported = await troupe(["import", "--dir", ex, "--chunk", "100", "--json"], { env: copy })
    expect(imported.code).toBe(0)
    expect(JSON.parse(imported.stdout).structures).toEqual([{ structure: "books", records: 250, resumedAt: 0 }])
    const count = async () => {
      const token = await server.userToken("admin", server.adminPassword, "copy")
      const res = await server.request("GET", "/workspace/copy/api/v1/records?structureId=books&includeCount=true&limit=1", { token })
      return res.body.pagination.total as number
    }
    expect(await count()).toBe(250)
    // done: a second run sends nothing; --restart --match upserts on the title instead of duplicating
    expect((await troupe(["import", "--dir", ex], { env: copy })).code).toBe(0)
    expect((await troupe(["import", "--dir", ex, "--restart", "--match", "title"], { env: copy })).code).toBe(0)
    expect(await count()).toBe(250)

    const bad = Path.join(work, "bad")
    Fs.mkdirSync(bad)
    Fs.writeFileSync(Path.join(bad, "books.jsonl"), `{"data":{"title":"ok"}}\nnot json\n`)
    const broken = await troupe(["import", "--dir", bad], { env: copy })
    expect(broken.code).toBe(1)
    expect(broken.stderr).toContain("books.jsonl:2: not JSON")
    const chunk = await troupe(["import", "--dir", bad, "--chunk", "5000"], { env: copy })
    expect(chunk.code).toBe(2)
  })

  it("deploys a directory of functions through drafts, updates changed ones, and tails their runs across a dropped connection", async () => {
    const dir = Path.join(work, "functions")
    Fs.mkdirSync(dir)
    Fs.writeFileSync(Path.join(dir, "add.js"), "async function run() {\n  return 1 + (executionParams.n ?? 0)\n}\n")
    Fs.writeFileSync(Path.join(dir, "boom.js"), 'async function run() { throw new Error("boom") }\n')
    const created = await troupe(["functions", "deploy", dir, "--json"])
    expect(created.code).toBe(0)
    const fns = JSON.parse(created.stdout).functions
    expect(fns.map((f: any) => [f.name, f.action, f.version])).toEqual([
      ["add", "created", 1],
      ["boom", "created", 1]
    ])
    Fs.writeFileSync(Path.join(dir, "add.js"), "async function run() {\n  return 2 + (executionParams.n ?? 0)\n}\n")
    const again = await troupe(["functions", "deploy", dir])
    expect(again.stdout).toContain("add: updated")
    expect(again.stdout).toContain("boom: unchanged")
    Fs.writeFileSync(Path.join(dir, "bad.js"), "exports.handler = async () => 1\n")
    const refused = await troupe(["functions", "deploy", dir])
    expect(refused.code).toBe(1)
    expect(refused.stderr).toContain("bad.js")
    expect((await api("GET", "/drafts")).body.drafts).toEqual([])

    const [add, boom] = fns.map((f: any) => f.id)
    const proxy = await startCuttingProxy(server.baseUrl)
    try {
      const tail = troupe(["runs", "tail", "--json", "--limit", "3"], { env: { TROUPE_URL: proxy.baseUrl } })
      await until(() => proxy.lastEventIds.length >= 1, 10_000, 50)
      expect((await api("POST", `/functions/${add}/execute`, { n: 1 })).status).toBe(200)
      // the proxy cuts the stream after that event; the CLI reconnects with Last-Event-ID
      await until(() => proxy.lastEventIds.length >= 2, 10_000, 50)
      await api("POST", `/functions/${boom}/execute`, {})
      await api("POST", `/functions/${add}/execute`, { n: 2 })
      const out = await tail
      expect(out.code).toBe(0)
      const events = out.stdout
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l))
      expect(events.map((e: any) => e.event).sort()).toEqual(["function.completed", "function.completed", "function.failed"])
      expect(new Set(events.map((e: any) => e.id)).size).toBe(3)
      expect(proxy.lastEventIds[0]).toBeUndefined()
      expect(proxy.lastEventIds[1]).toBe(events[0].id)
      expect(out.stderr).toContain("reconnecting")
    } finally {
      await proxy.close()
    }
  })

  it("backs up and restores the database", async () => {
    const noTarget = await troupe(["backup", "--out", Path.join(work, "x")], { env: { DATABASE_URL: undefined } })
    expect(noTarget.code).toBe(2)
    if (server.databaseUrl !== undefined) {
      const dump = Path.join(work, "troupe.dump")
      const backup = await troupe(["backup", "--database-url", server.databaseUrl, "--out", dump, "--json"])
      expect(backup.stderr).toBe("")
      expect(backup.code).toBe(0)
      expect(JSON.parse(backup.stdout)).toMatchObject({ kind: "postgres", file: dump })
      const target = await freshDatabase(process.env.DATABASE_URL!)
      try {
        const restore = await troupe(["restore", "--database-url", target.url, "--in", dump])
        expect(restore.code).toBe(0)
        const sql = postgres(target.url, { max: 1, onnotice: () => {} })
        const [row] = await sql`SELECT count(*)::int AS n FROM records`
        await sql.end()
        expect(row!.n).toBeGreaterThanOrEqual(500)
      } finally {
        await target.drop()
      }
    } else {
      const archive = Path.join(work, "data.tar")
      const running = await troupe(["backup", "--data-dir", dataDir, "--out", archive])
      expect(running.code).toBe(1)
      expect(running.stderr).toContain("stop the Troupe node first")
      await server.stop()
      const backup = await troupe(["backup", "--data-dir", dataDir, "--out", archive])
      expect(backup.stderr).not.toContain("troupe:")
      expect(backup.code).toBe(0)
      const restored = Path.join(work, "restored")
      expect((await troupe(["restore", "--data-dir", restored, "--in", archive])).code).toBe(0)
      expect((await troupe(["restore", "--data-dir", restored, "--in", archive])).code).toBe(1)
      const db = await PGlite.create(restored)
      const { rows } = await db.query<{ n: number }>("SELECT count(*)::int AS n FROM records")
      await db.close()
      expect(rows[0]!.n).toBeGreaterThanOrEqual(500)
    }
  })
})
