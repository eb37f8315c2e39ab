// The checked-in packages/client-fetch/src/schema.ts must be what `npm run gen:client` makes of the current API.
import * as Fs from "node:fs"
import { describe, expect, it } from "vitest"
import { generate, schemaPath } from "../packages/client-fetch/scripts/generate.ts"

describe("@troupe/client-fetch schema.ts", () => {
  it("matches the OpenAPI document of @troupe/api (run `npm run gen:client` when this fails)", async () => {
    const expected = await generate()
    const actual = Fs.readFileSync(schemaPath, "utf8")
    if (actual !== expected) {
      const a = actual.split("\n")
      const e = expected.split("\n")
      const line = e.findIndex((l, i) => l !== a[i])
      expect.fail(
        `src/schema.ts is stale from line ${line + 1}: run \`npm run gen:client\`\n` + `checked in: ${a[line]}\ngenerated:  ${e[line]}`
      )
    }
  }, 60_000)
})
