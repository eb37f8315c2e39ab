import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { bundleConsole } from "./ConsoleBundle.ts"

const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes)

describe("bundleConsole", () => {
  it.effect(
    "bundles the sources into hashed files that index.html names, CodeMirror split off",
    () =>
      Effect.gen(function* () {
        const bundle = yield* bundleConsole
        const names = [...bundle.assets.keys()]
        const main = names.find((n) => /^main-\w+\.js$/.test(n))
        const style = names.find((n) => /^main-\w+\.css$/.test(n))
        expect(main).toBeDefined()
        expect(style).toBeDefined()
        const html = text(bundle.index.body)
        expect(html).toContain(`src="/console/assets/${main}"`)
        expect(html).toContain(`href="/console/assets/${style}"`)
        // the editor (most of the bytes) loads with the first code editor, not with the page
        const mainJs = text(bundle.assets.get(main!)!.body)
        expect(mainJs).not.toContain("cm-scroller")
        expect(names.some((n) => n.startsWith("chunk-") && text(bundle.assets.get(n)!.body).includes("cm-scroller"))).toBe(true)
        for (const asset of bundle.assets.values()) expect(asset.gzip.length).toBeLessThan(asset.body.length)
        // the next bundle (another start) comes from the disk cache, the same files
        const again = yield* bundleConsole
        expect(again.fromCache).toBe(true)
        expect([...again.assets.keys()].sort()).toEqual([...names].sort())
        expect(again.index.etag).toBe(bundle.index.etag)
      }),
    30_000
  )
})
