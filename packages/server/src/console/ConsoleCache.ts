// The console's built files on disk, with what they were made from: esbuild's version and the size and modification
// time of every input file. A node serves them as they are while all of that is unchanged, so only the first start
// after an install or a source change runs esbuild (1-5 s of a 2-core machine's time). Written to a new directory
// and renamed into place, so nodes starting together never read a half-written cache; any failure to read or write
// it only means building again.
import { Effect } from "effect"
import * as Crypto from "node:crypto"
import * as Fs from "node:fs/promises"
import * as FsSync from "node:fs"
import * as Path from "node:path"

export interface BuiltConsole {
  readonly version: string
  readonly files: ReadonlyArray<{ readonly name: string; readonly contents: Uint8Array }>
  readonly inputs: ReadonlyArray<string>
}

interface Manifest {
  readonly version: string
  readonly key: string
  readonly inputs: ReadonlyArray<string>
  readonly files: ReadonlyArray<string>
}

/** `<nearest node_modules above the app>/.cache/troupe-console`, or one in the system's temporary directory. */
export const cacheDir = (from: string): string => {
  for (let dir = from; ; dir = Path.dirname(dir)) {
    if (FsSync.existsSync(Path.join(dir, "node_modules"))) return Path.join(dir, "node_modules", ".cache", "troupe-console")
    if (Path.dirname(dir) === dir) return Path.join(FsSync.realpathSync(process.env.TMPDIR ?? "/tmp"), "troupe-console-cache")
  }
}

/** A digest of every input's path, size and modification time (a missing one counts too). */
export const inputsKey = (inputs: ReadonlyArray<string>) =>
  Effect.promise(async () => {
    const hash = Crypto.createHash("sha256")
    for (const path of inputs) {
      const stat = await Fs.stat(path).catch(() => undefined)
      hash.update(`${path}\u0000${stat === undefined ? "-" : `${stat.size}:${stat.mtimeMs}`}\n`)
    }
    return hash.digest("base64url")
  })

/** The cached build and its key, or undefined when there is none (or it cannot be read). */
export const readCache = (dir: string) =>
  Effect.promise(async (): Promise<(BuiltConsole & { readonly key: string }) | undefined> => {
    try {
      const current = Path.join(dir, "current")
      const manifest = JSON.parse(await Fs.readFile(Path.join(current, "manifest.json"), "utf8")) as Manifest
      const files = await Promise.all(
        manifest.files.map(async (name) => ({ name, contents: new Uint8Array(await Fs.readFile(Path.join(current, name))) }))
      )
      return { version: manifest.version, key: manifest.key, inputs: manifest.inputs, files }
    } catch {
      return undefined
    }
  })

/** Stores a build under its key, replacing the one before; never fails. */
export const writeCache = (dir: string, built: BuiltConsole, key: string) =>
  Effect.promise(async () => {
    const staging = Path.join(dir, `staging-${process.pid}-${Crypto.randomBytes(4).toString("hex")}`)
    const current = Path.join(dir, "current")
    try {
      await Fs.mkdir(staging, { recursive: true })
      for (const file of built.files) await Fs.writeFile(Path.join(staging, file.name), file.contents)
      const manifest: Manifest = { version: built.version, key, inputs: built.inputs, files: built.files.map((f) => f.name) }
      await Fs.writeFile(Path.join(staging, "manifest.json"), JSON.stringify(manifest))
      const old = Path.join(dir, `old-${process.pid}-${Crypto.randomBytes(4).toString("hex")}`)
      await Fs.rename(current, old).catch(() => undefined)
      await Fs.rename(staging, current)
      await Fs.rm(old, { recursive: true, force: true })
    } catch {
      await Fs.rm(staging, { recursive: true, force: true }).catch(() => undefined)
    }
  })
