// The server's rooms and which may import which (docs/ARCHITECTURE.md, "Rooms"): the imports between folders of
// packages/server/src form no cycle, the ground floor (lib/, platform/, migrations/) imports no domain, no source
// file imports from test/, and only the writer (records/RecordEntity.ts) imports the record engine (records/write/).
import * as Fs from "node:fs"
import * as Path from "node:path"
import { describe, expect, it } from "vitest"

const root = Path.resolve(import.meta.dirname, "../packages/server/src")
const ground = new Set(["lib", "platform", "migrations"])

/** Every non-test source file of the server, by path relative to src/. */
const sources = (dir: string): Array<string> =>
  Fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = Path.join(dir, entry.name)
    if (entry.isDirectory()) return entry.name === "app" && dir.endsWith("console") ? [] : sources(path)
    return /\.tsx?$/.test(entry.name) && !/\.test\.tsx?$/.test(entry.name) ? [Path.relative(root, path)] : []
  })

const roomOf = (file: string) => (file.includes(Path.sep) ? file.split(Path.sep)[0]! : "main")

/** Relative imports (static and dynamic, including `export … from`) of one file, resolved against src/. */
const importsOf = (file: string) => {
  const text = Fs.readFileSync(Path.join(root, file), "utf8")
  const specifiers = [...text.matchAll(/(?:from|import)\s*\(?\s*["'](\.{1,2}\/[^"']+)["']/g)].map((m) => m[1]!)
  return specifiers.map((s) => Path.relative(root, Path.resolve(Path.dirname(Path.join(root, file)), s)))
}

const files = sources(root)
/** room -> rooms it imports, with one file that does, for the failure message */
const edges = new Map<string, Map<string, string>>()
for (const file of files) {
  const from = roomOf(file)
  for (const target of importsOf(file)) {
    if (target.startsWith("..")) continue
    const to = roomOf(target)
    if (to === from) continue
    if (!edges.has(from)) edges.set(from, new Map())
    if (!edges.get(from)!.has(to)) edges.get(from)!.set(to, `${file} -> ${target}`)
  }
}

/** Every cycle found by a depth-first walk, as the rooms along it. */
const cycles = () => {
  const found: Array<Array<string>> = []
  const state = new Map<string, "open" | "done">()
  const walk = (room: string, path: Array<string>) => {
    state.set(room, "open")
    for (const next of edges.get(room)?.keys() ?? []) {
      if (state.get(next) === "open") found.push([...path.slice(path.indexOf(next)), room, next])
      else if (state.get(next) === undefined) walk(next, [...path, room])
    }
    state.set(room, "done")
  }
  for (const room of edges.keys()) if (state.get(room) === undefined) walk(room, [])
  return found.map((cycle) => cycle.map((room, i) => (i === 0 ? room : `${room} (${edges.get(cycle[i - 1]!)!.get(room)})`)).join(" -> "))
}

describe("the server's import graph", () => {
  it("finds the rooms it checks", () => {
    for (const room of [
      "platform",
      "identity",
      "records",
      "query",
      "structures",
      "events",
      "compute",
      "notification",
      "storage",
      "search",
      "intelligence"
    ]) {
      expect(edges.has(room), room).toBe(true)
    }
  })

  it("has no cycle between folders", () => {
    expect(cycles()).toEqual([])
  })

  it("keeps the ground floor free of domains", () => {
    const upward = [...edges].flatMap(([from, tos]) =>
      ground.has(from) ? [...tos].filter(([to]) => !ground.has(to)).map(([, example]) => example) : []
    )
    expect(upward).toEqual([])
  })

  it("writes records only through the writer: no file but records/RecordEntity.ts imports the engine (records/write/)", () => {
    const engine = `records${Path.sep}write${Path.sep}`
    const writer = Path.join("records", "RecordEntity.ts")
    const intoEngine = files
      .filter((file) => file !== writer && !file.startsWith(engine))
      .flatMap((file) =>
        importsOf(file)
          .filter((t) => t.startsWith(engine))
          .map((t) => `${file} -> ${t}`)
      )
    expect(intoEngine).toEqual([])
  })

  it("never imports test code from the product", () => {
    const intoTests = files.flatMap((file) =>
      importsOf(file)
        .filter((t) => t.startsWith(`..${Path.sep}..${Path.sep}..${Path.sep}test`))
        .map((t) => `${file} -> ${t}`)
    )
    expect(intoTests).toEqual([])
  })
})
