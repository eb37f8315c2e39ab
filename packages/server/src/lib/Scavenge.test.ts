import { describe, expect, it } from "vitest"
import * as Vm from "node:vm"
import { bodyBytesStored, SCAVENGE_BYTES } from "./Scavenge.ts"

describe("Scavenge", () => {
  it("runs scavenges as body bytes are counted, and leaves no `gc` to contexts made afterwards", () => {
    for (let i = 0; i < 3; i++) bodyBytesStored(SCAVENGE_BYTES)
    expect(Vm.runInNewContext("typeof gc")).toBe("undefined")
    expect((globalThis as { gc?: unknown }).gc).toBeUndefined()
  })
})
