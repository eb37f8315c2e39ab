import { assert, describe, it } from "@effect/vitest"
import { cellValue, chunks, parseCsv, parseImport } from "./ImportFile.ts"

const properties = [
  { name: "title", type: "string" },
  { name: "pages", type: "number" },
  { name: "inStock", type: "boolean" },
  { name: "tags", type: "array" },
  { name: "meta", type: "object" }
]

describe("parseCsv", () => {
  it("reads quoted cells with commas, escaped quotes and line breaks, CRLF rows and a BOM", () => {
    assert.deepStrictEqual(parseCsv("\uFEFFa,b\r\n\"x, y\",\"say \"\"hi\"\"\"\r\n\"two\nlines\",3\n"), [
      ["a", "b"],
      ["x, y", "say \"hi\""],
      ["two\nlines", "3"]
    ])
  })
})

describe("cellValue", () => {
  it("types a cell by its property", () => {
    assert.strictEqual(cellValue("12.5", "number"), 12.5)
    assert.strictEqual(cellValue("abc", "number"), "abc") // left for the server to refuse, naming the field
    assert.strictEqual(cellValue("yes", "boolean"), true)
    assert.strictEqual(cellValue("0", "boolean"), false)
    assert.deepStrictEqual(cellValue("a; b", "array"), ["a", "b"])
    assert.deepStrictEqual(cellValue("[1,2]", "array"), [1, 2])
    assert.deepStrictEqual(cellValue("{\"k\":1}", "object"), { k: 1 })
    assert.strictEqual(cellValue("  ", "string"), undefined)
    assert.strictEqual(cellValue("007", "string"), "007")
  })
})

describe("parseImport", () => {
  it("reads a CSV file into typed record data, leaving empty cells and id out", () => {
    const parsed = parseImport("id,title,pages,inStock,tags\n1,Dune,412,true,a;b\n2,Emma,,false,\n", "books.csv", properties)
    assert.deepStrictEqual(parsed.records, [
      { title: "Dune", pages: 412, inStock: true, tags: ["a", "b"] },
      { title: "Emma", inStock: false }
    ])
    assert.deepStrictEqual(parsed.problems, [])
  })

  it("reads semicolon-separated CSV", () => {
    assert.deepStrictEqual(parseImport("title;pages\nDune;412\n", "x.csv", properties).records, [{ title: "Dune", pages: 412 }])
  })

  it("reports a row with more cells than columns", () => {
    assert.deepStrictEqual(parseImport("title\nDune,extra\n", "x.csv", properties).problems, ["row 2: 2 cells for 1 columns"])
  })

  it("reads JSON arrays, {records}, exported records and JSON lines", () => {
    assert.deepStrictEqual(parseImport("[{\"title\":\"A\"}]", "a.json", properties).records, [{ title: "A" }])
    assert.deepStrictEqual(parseImport("{\"records\":[{\"title\":\"B\"}]}", "b.json", properties).records, [{ title: "B" }])
    assert.deepStrictEqual(parseImport("[{\"id\":\"x\",\"data\":{\"title\":\"C\"}}]", "c.json", properties).records, [{ title: "C" }])
    const lines = parseImport("{\"title\":\"D\"}\nnot json\n{\"title\":\"E\"}\n", "d.jsonl", properties)
    assert.deepStrictEqual(lines.records, [{ title: "D" }, { title: "E" }])
    assert.deepStrictEqual(lines.problems, ["line 2: not JSON"])
  })

  it("keeps a `data` field as data when the structure declares one", () => {
    const withData = [...properties, { name: "data", type: "object" }]
    assert.deepStrictEqual(parseImport("[{\"data\":{\"k\":1}}]", "x.json", withData).records, [{ data: { k: 1 } }])
  })
})

describe("chunks", () => {
  it("splits into batches of at most the size", () => {
    assert.deepStrictEqual(chunks([1, 2, 3, 4, 5], 2), [[1, 2], [3, 4], [5]])
  })
})
