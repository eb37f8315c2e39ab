// Bulk import: a JSON file (an array of records, `{records: [...]}`, or one JSON object per line) or a CSV file
// (a header row of field names) read into record data, CSV cells typed by the structure's properties.

export interface PropertyShape {
  readonly name: string
  readonly type: string
}

export interface ParsedImport {
  readonly records: ReadonlyArray<Record<string, unknown>>
  /** rows that could not be read, by 1-based row (or line) number */
  readonly problems: ReadonlyArray<string>
}

/** RFC 4180: quoted cells with "" escapes and line breaks, CRLF or LF rows; a UTF-8 BOM is dropped. */
export const parseCsv = (text: string, separator = ","): Array<Array<string>> => {
  const rows: Array<Array<string>> = []
  let row: Array<string> = []
  let cell = ""
  let quoted = false
  let i = text.charCodeAt(0) === 0xfeff ? 1 : 0
  for (; i < text.length; i++) {
    const c = text[i]!
    if (quoted) {
      if (c === '"') {
        if (text[i + 1] === '"') {
          cell += '"'
          i++
        } else quoted = false
      } else cell += c
    } else if (c === '"' && cell === "") quoted = true
    else if (c === separator) {
      row.push(cell)
      cell = ""
    } else if (c === "\n" || c === "\r") {
      if (c === "\r" && text[i + 1] === "\n") i++
      row.push(cell)
      rows.push(row)
      row = []
      cell = ""
    } else cell += c
  }
  if (cell !== "" || row.length > 0) {
    row.push(cell)
    rows.push(row)
  }
  return rows.filter((r) => !(r.length === 1 && r[0] === ""))
}

const truthy = new Set(["true", "1", "yes", "y"])
const falsy = new Set(["false", "0", "no", "n"])

/** A CSV cell as the value its property's type wants; undefined leaves the field out (an empty cell). */
export const cellValue = (raw: string, type: string | undefined): unknown => {
  const text = raw.trim()
  if (text === "") return undefined
  switch (type) {
    case "number": {
      const n = Number(text)
      return Number.isFinite(n) ? n : raw
    }
    case "boolean":
      return truthy.has(text.toLowerCase()) ? true : falsy.has(text.toLowerCase()) ? false : raw
    case "array":
    case "object":
      try {
        return JSON.parse(text)
      } catch {
        return type === "array"
          ? text
              .split(";")
              .map((s) => s.trim())
              .filter((s) => s.length > 0)
          : raw
      }
    default:
      return text === "null" && type !== "string" ? null : raw
  }
}

const fromCsv = (text: string, properties: ReadonlyArray<PropertyShape>): ParsedImport => {
  const separator = (text.split(/\r?\n/, 1)[0] ?? "").includes(";") && !(text.split(/\r?\n/, 1)[0] ?? "").includes(",") ? ";" : ","
  const [header, ...rows] = parseCsv(text, separator)
  if (header === undefined) return { records: [], problems: ["The file is empty"] }
  const types = new Map(properties.map((p) => [p.name, p.type]))
  const names = header.map((h) => h.trim())
  const problems: Array<string> = []
  const records = rows.flatMap((cells, r) => {
    if (cells.length > names.length) {
      problems.push(`row ${r + 2}: ${cells.length} cells for ${names.length} columns`)
      return []
    }
    const data: Record<string, unknown> = {}
    names.forEach((name, c) => {
      if (name === "" || name === "id") return
      const value = cellValue(cells[c] ?? "", types.get(name))
      if (value !== undefined) data[name] = value
    })
    return [data]
  })
  return { records, problems }
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v)

/** A record read back from a Troupe export (`{id, data, ...}`) gives its data; any other object is the data. */
const dataOf = (item: unknown, properties: ReadonlyArray<PropertyShape>): Record<string, unknown> | undefined => {
  if (!isObject(item)) return undefined
  if (isObject(item.data) && !properties.some((p) => p.name === "data")) return item.data
  return item
}

const fromJson = (text: string, properties: ReadonlyArray<PropertyShape>): ParsedImport => {
  let items: Array<unknown>
  const problems: Array<string> = []
  try {
    const parsed: unknown = JSON.parse(text)
    items = Array.isArray(parsed)
      ? parsed
      : isObject(parsed) && Array.isArray(parsed.records)
        ? parsed.records
        : isObject(parsed) && Array.isArray(parsed.results)
          ? parsed.results
          : [parsed]
  } catch {
    // one JSON value per line (JSONL, as `troupe export` writes)
    items = []
    text.split(/\r?\n/).forEach((line, i) => {
      if (line.trim() === "") return
      try {
        items.push(JSON.parse(line))
      } catch {
        problems.push(`line ${i + 1}: not JSON`)
      }
    })
  }
  const records = items.flatMap((item, i) => {
    const data = dataOf(item, properties)
    if (data === undefined) {
      problems.push(`item ${i + 1}: not an object`)
      return []
    }
    return [data]
  })
  return { records, problems }
}

/** Reads a file's text by its name (`.csv`) or its first character. */
export const parseImport = (text: string, fileName: string, properties: ReadonlyArray<PropertyShape>): ParsedImport => {
  const start = text.replace(/^\uFEFF/, "").trimStart()[0]
  const csv = /\.csv$/i.test(fileName) || (start !== "[" && start !== "{")
  return csv ? fromCsv(text, properties) : fromJson(text.replace(/^\uFEFF/, ""), properties)
}

/** Splits `items` into chunks of at most `size`. */
export const chunks = <A>(items: ReadonlyArray<A>, size: number): Array<Array<A>> => {
  const out: Array<Array<A>> = []
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size))
  return out
}
