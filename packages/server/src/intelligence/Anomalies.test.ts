import { describe, expect, it } from "vitest"
import { missingSpike, outliers, robustSpread, volumeSpike } from "./Anomalies.ts"
import { checkField, editDistance } from "./Checks.ts"
import { applySuggestion, infer } from "./Inference.ts"
import { emptyProfile, profileRecord } from "./Profile.ts"

const days = (ns: ReadonlyArray<number>) => ns.map((n, i) => ({ day: `d${i}`, n }))

describe("anomalies", () => {
  it("the median and MAD are not moved by the outliers they find", () => {
    const values = [...Array.from({ length: 98 }, (_, i) => 100 + (i % 7)), 10_000, -5_000]
    expect(robustSpread(values).median).toBe(103)
    const found = outliers(
      "x",
      values.map((value, i) => ({ id: `r${i}`, value })),
      3.5
    )
    expect(found.map((f) => f.observed)).toEqual([10_000, -5_000])
  })

  it("write volume: a spike against at least 7 days before, nothing on a steady day", () => {
    expect(volumeSpike(days([50, 52, 48, 51, 49, 50, 50, 400]), 3.5)).toHaveLength(1)
    expect(volumeSpike(days([50, 52, 48, 51, 49, 50, 50, 53]), 3.5)).toEqual([])
    expect(volumeSpike(days([50, 400]), 3.5)).toEqual([])
  })

  it("missing values: a jump in the last 24 hours' share", () => {
    expect(missingSpike("email", "d", { missing: 15, total: 30 }, { missing: 5, total: 500 })[0]?.kind).toBe("missing_spike")
    expect(missingSpike("email", "d", { missing: 1, total: 30 }, { missing: 5, total: 500 })).toEqual([])
  })
})

describe("checks and inference", () => {
  it("edit distance stops past its bound", () => {
    expect(editDistance("germny", "germany")).toBe(1)
    expect(editDistance("austria", "australia", 1)).toBe(2)
  })

  it("a unit factor: 1999 among prices around 20", () => {
    const samples = Array.from({ length: 30 }, (_, i) => ({ id: `r${i}`, value: 18 + (i % 5) }))
    samples.push({ id: "cents", value: 1999 })
    expect(checkField("price", samples)).toMatchObject([{ recordId: "cents", suggestedValue: 19.99 }])
  })

  it("a profile within its limits proposes the dominant type", () => {
    const profile = emptyProfile()
    const limits = { maxKeysPerRecord: 2, maxNestingDepth: 1, maxStringLengthSampled: 10 }
    for (let i = 0; i < 10; i++) profileRecord(profile, { n: i, deep: { a: 1 }, third: "cut" }, limits)
    expect(Object.keys(profile.fields).sort()).toEqual(["deep", "n"])
    const structure = { properties: [], recordSlug: "s" } as any
    expect(infer(structure, profile).map((s) => s.property)).toEqual([
      { name: "n", type: "number", integer: true },
      { name: "deep", type: "object" }
    ])
  })

  it("an object is proposed with its children, an array with its item type (and not at all when items are mixed)", () => {
    const profile = emptyProfile()
    const limits = { maxKeysPerRecord: 100, maxNestingDepth: 3, maxStringLengthSampled: 100 }
    for (let i = 0; i < 10; i++) {
      profileRecord(profile, { address: { city: `c${i}`, geo: { lat: i / 3 } }, tags: ["a", "b"], mixed: [1, "x"] }, limits)
    }
    const byName = Object.fromEntries(infer({ properties: [], recordSlug: "s" } as any, profile).map((s) => [s.property.name, s.property]))
    expect(byName.address).toEqual({
      name: "address",
      type: "object",
      properties: [
        { name: "city", type: "string" },
        { name: "geo", type: "object", properties: [{ name: "lat", type: "number" }] }
      ]
    })
    expect(byName.tags).toEqual({ name: "tags", type: "array", items: { type: "string" } })
    expect(byName.mixed).toBeUndefined()
  })

  it("a new key inside a declared object is proposed under its path and accepted into that object", () => {
    const profile = emptyProfile()
    const limits = { maxKeysPerRecord: 100, maxNestingDepth: 3, maxStringLengthSampled: 100 }
    for (let i = 0; i < 10; i++) {
      profileRecord(
        profile,
        { address: { street: `s${i}`, zip: `${1000 + i}`, geo: { lat: i / 3 } }, meta: { any: i }, loose: { x: i } },
        limits
      )
    }
    const structure = {
      recordSlug: "s",
      properties: [
        { id: "a", name: "address", type: "object", properties: [{ id: "st", name: "street", type: "string" }] },
        // a free-form object (no declared properties) takes any key: nothing is proposed inside it
        { id: "m", name: "meta", type: "object" },
        { id: "l", name: "loose", type: "object", properties: [] }
      ]
    } as any
    const added = infer(structure, profile).filter((s) => s.kind === "add_property")
    expect(added.map((s) => s.property)).toEqual([
      { name: "address.zip", type: "string" },
      { name: "address.geo", type: "object", properties: [{ name: "lat", type: "number" }] }
    ])
    expect(added[0]!.signature).toBe("add_property:address.zip:string")
    expect(added[0]!.explanation).toBe("`address.zip` appears in 10 of 10 records and all 10 values are strings.")

    const applied = applySuggestion(structure, added[0]!)
    expect(applied).toEqual({
      properties: [
        {
          id: "a",
          name: "address",
          type: "object",
          properties: [
            { id: "st", name: "street", type: "string" },
            { name: "zip", type: "string" }
          ]
        },
        structure.properties[1],
        structure.properties[2]
      ]
    })
    // once declared, it is not proposed again; the definition changed since: a conflict naming it
    const after = { ...structure, properties: (applied as any).properties }
    expect(infer(after, profile).map((s) => s.property.name)).not.toContain("address.zip")
    expect(applySuggestion(after, added[0]!)).toEqual({ conflict: "property `address.zip` already exists (type string)" })
    const flat = { ...structure, properties: [{ id: "a", name: "address", type: "string" }] } as any
    expect(applySuggestion(flat, added[1]!)).toEqual({ conflict: "property `address` is no longer an object" })
  })
})
