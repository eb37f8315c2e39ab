// `npm install` on a Node.js older than 24 stops at once with npm's engine error (the `.npmrc` sets engine-strict),
// before isolated-vm's native build could end in a node-gyp stack trace. Runs when an older Node with its npm is on
// the machine (Debian's /usr/bin/node here; OLD_NODE_BIN names another directory); the install is offline and dry.
import { spawnSync } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { describe, expect, it } from "vitest"

const root = Path.resolve(import.meta.dirname, "..")
const bin = process.env.OLD_NODE_BIN ?? "/usr/bin"
const version = () => spawnSync(Path.join(bin, "node"), ["--version"], { encoding: "utf8" }).stdout?.trim() ?? ""
const old = Fs.existsSync(Path.join(bin, "npm")) && /^v(1\d|2[0-3])\./.test(version())

describe("npm install on an old Node.js", () => {
  it("the project asks for Node 24 and npm is strict about it", () => {
    expect(JSON.parse(Fs.readFileSync(Path.join(root, "package.json"), "utf8")).engines.node).toBe(">=24")
    expect(Fs.readFileSync(Path.join(root, ".npmrc"), "utf8")).toMatch(/^engine-strict=true$/m)
  })

  it.skipIf(!old)("stops with the engine error before building anything", () => {
    const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "troupe-install-"))
    try {
      const pkg = JSON.parse(Fs.readFileSync(Path.join(root, "package.json"), "utf8"))
      for (const file of ["package.json", "package-lock.json", ".npmrc"]) Fs.copyFileSync(Path.join(root, file), Path.join(dir, file))
      for (const ws of pkg.workspaces as Array<string>) {
        Fs.mkdirSync(Path.join(dir, ws), { recursive: true })
        Fs.copyFileSync(Path.join(root, ws, "package.json"), Path.join(dir, ws, "package.json"))
      }
      const run = spawnSync(Path.join(bin, "npm"), ["install", "--offline", "--dry-run"], {
        cwd: dir,
        encoding: "utf8",
        env: { ...process.env, PATH: `${bin}:/bin`, npm_config_cache: Path.join(dir, ".npm") },
        timeout: 120_000
      })
      expect(run.status).not.toBe(0)
      expect(run.stderr).toContain("EBADENGINE")
      expect(run.stderr).not.toContain("gyp")
    } finally {
      Fs.rmSync(dir, { recursive: true, force: true })
    }
  })
})
