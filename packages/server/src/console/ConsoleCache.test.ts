import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { inputsKey, readCache, writeCache } from "./ConsoleCache.ts"

describe("the console's build cache", () => {
  it.effect("keeps a build with its inputs' key; a changed input changes the key", () =>
    Effect.gen(function* () {
      const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "troupe-console-cache-"))
      const input = Path.join(dir, "main.tsx")
      Fs.writeFileSync(input, "export const a = 1")
      expect(yield* readCache(Path.join(dir, "cache"))).toBeUndefined()
      const key = yield* inputsKey([input])
      const built = { version: "0.28.2", inputs: [input], files: [{ name: "main-X.js", contents: new TextEncoder().encode("x") }] }
      yield* writeCache(Path.join(dir, "cache"), built, key)
      yield* writeCache(Path.join(dir, "cache"), built, key) // replacing is fine
      const cached = yield* readCache(Path.join(dir, "cache"))
      expect(cached).toMatchObject({ version: "0.28.2", key, inputs: [input] })
      expect(cached!.files.map((f) => [f.name, new TextDecoder().decode(f.contents)])).toEqual([["main-X.js", "x"]])
      Fs.writeFileSync(input, "export const a = 22")
      expect(yield* inputsKey([input])).not.toBe(key)
      Fs.rmSync(input)
      expect(yield* inputsKey([input])).not.toBe(key)
      Fs.rmSync(dir, { recursive: true, force: true })
    })
  )
})
