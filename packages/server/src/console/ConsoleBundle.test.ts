import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { bundleConsole } from "./ConsoleBundle.ts"

const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes)

describe("bundleConsole", () => {
  it.effect("bundles the sources into hashed files that index.html names, CodeMirror split off", () =>
    Effect.gen(function*() {
      const bundle = yield* bundleConsole
      const names = [...bundle.assets.keys()]
      const main = names.find((n) => /^main-\w+\.js$/.test(n))
      const style = names.find((n) => /^main-\w+\.css$/.test(n))
      assert.isDefined(main)
      assert.isDefined(style)
      const html = text(bundle.index.body)
      assert.include(html, `src="/console/assets/${main}"`)
      assert.include(html, `href="/console/assets/${style}"`)
      // the editor (most of the bytes) loads with the first code editor, not with the page
      const mainJs = text(bundle.assets.get(main!)!.body)
      assert.notInclude(mainJs, "cm-scroller")
      assert.isTrue(names.some((n) => n.startsWith("chunk-") && text(bundle.assets.get(n)!.body).includes("cm-scroller")))
      for (const asset of bundle.assets.values()) assert.isBelow(asset.gzip.length, asset.body.length)
    }), 30_000)
})
