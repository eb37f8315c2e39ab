import { describe, expect, it } from "@effect/vitest"
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
    expect(parseCsv('\uFEFFa,b\r\n"x, y","say ""hi"""\r\n"two\nlines",3\n')).toStrictEqual([
      ["a", "b"],
      ["x, y", 'say "hi"'],
      ["two\nlines", "3"]
    ])
  })
})

describe("cellValue", () => {
  it("types a cell by its property", () => {
    expect(cellValue("12.5", "number")).toBe(12.5)
    expect(cellValue("abc", "number")).toBe("abc") // left for the server to refuse, naming the field
    expect(cellValue("yes", "boolean")).toBe(true)
    expect(cellValue("0", "boolean")).toBe(false)
    expect(cellValue("a; b", "array")).toStrictEqual(["a", "b"])
    expect(cellValue("[1,2]", "array")).toStrictEqual([1, 2])
    expect(cellValue('{"k":1}', "object")).toStrictEqual({ k: 1 })
    expect(cellValue("  ", "string")).toBe(undefined)
    expect(cellValue("007", "string")).toBe("007")
  })
})

describe("parseImport", () => {
  it("reads a CSV file into typed record data, leaving empty cells and id out", () => {
    const parsed = parseImport("id,title,pages,inStock,tags\n1,Dune,412,true,a;b\n2,Emma,,false,\n", "books.csv", properties)
    expect(parsed.records).toStrictEqual([
      { title: "Dune", pages: 412, inStock: true, tags: ["a", "b"] },
      { title: "Emma", inStock: false }
    ])
    expect(parsed.problems).toStrictEqual([])
  })

  it("reads semicolon-separated CSV", () => {
    expect(parseImport("title;pages\nDune;412\n", "x.csv", properties).records).toStrictEqual([{ title: "Dune", pages: 412 }])
  })

  it("reports a row with more cells than columns", () => {
    expect(parseImport("title\nDune,extra\n", "x.csv", properties).problems).toStrictEqual(["row 2: 2 cells for 1 columns"])
  })

  it("reads JSON arrays, {records}, exported records and JSON lines", () => {
    expect(parseImport('[{"title":"A"}]', "a.json", properties).records).toStrictEqual([{ title: "A" }])
    expect(parseImport('{"records":[{"title":"B"}]}', "b.json", properties).records).toStrictEqual([{ title: "B" }])
    expect(parseImport('[{"id":"x","data":{"title":"C"}}]', "c.json", properties).records).toStrictEqual([{ title: "C" }])
    const lines = parseImport('{"title":"D"}\nnot json\n{"title":"E"}\n', "d.jsonl", properties)
    expect(lines.records).toStrictEqual([{ title: "D" }, { title: "E" }])
    expect(lines.problems).toStrictEqual(["line 2: not JSON"])
  })

  it("keeps a `data` field as data when the structure declares one", () => {
    const withData = [...properties, { name: "data", type: "object" }]
    expect(parseImport('[{"data":{"k":1}}]', "x.json", withData).records).toStrictEqual([{ data: { k: 1 } }])
  })
})

describe("chunks", () => {
  it("splits into batches of at most the size", () => {
    expect(chunks([1, 2, 3, 4, 5], 2)).toStrictEqual([[1, 2], [3, 4], [5]])
  })
})
