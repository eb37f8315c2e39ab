// A record's data checked against its structure's properties as the user types, so the form shows problems before
// a save. The server's validator stays the judge (its answer's details are shown the same way): this covers the
// common rules (required, types, lengths, ranges, enum, pattern, format, items) and names fields as the server does
// (`data.price`, `data.tags[1]`).

export interface PropertyRules {
  readonly name: string
  readonly type: string
  readonly required?: boolean
  readonly nullable?: boolean
  readonly enum?: ReadonlyArray<unknown>
  readonly minLength?: number
  readonly maxLength?: number
  readonly pattern?: string
  readonly format?: string
  readonly minimum?: number
  readonly maximum?: number
  readonly exclusiveMinimum?: boolean
  readonly exclusiveMaximum?: boolean
  readonly multipleOf?: number
  readonly integer?: boolean
  readonly minItems?: number
  readonly maxItems?: number
  readonly uniqueItems?: boolean
  readonly items?: PropertyRules | { readonly type: string }
  readonly earliestDate?: string
  readonly latestDate?: string
  readonly relationship?: string
  readonly expression?: string
  readonly autoIncrement?: unknown
  readonly properties?: ReadonlyArray<PropertyRules>
}

export interface FieldProblem {
  readonly field: string
  readonly message: string
}

const formats: Record<string, RegExp> = {
  email: /^[^\s@]+@[^\s@]+\.[^\s@]+$/,
  url: /^[a-z][a-z0-9+.-]*:\/\/\S+$/i,
  uuid: /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i,
  date: /^\d{4}-\d{2}-\d{2}$/,
  datetime: /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?([Zz]|[+-]\d{2}:?\d{2})?$/
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v)

const patternOf = (source: string): RegExp | undefined => {
  try {
    return new RegExp(source, "u")
  } catch {
    return undefined
  }
}

const checkValue = (rules: PropertyRules, value: unknown, field: string, out: Array<FieldProblem>) => {
  const problem = (message: string) => out.push({ field, message })
  if (value === null) {
    if (rules.nullable !== true) problem("must not be null")
    return
  }
  if (rules.enum !== undefined && rules.enum.length > 0 && !rules.enum.some((e) => JSON.stringify(e) === JSON.stringify(value))) {
    problem(`must be one of ${rules.enum.map((e) => JSON.stringify(e)).join(", ")}`)
    return
  }
  switch (rules.type) {
    case "string": {
      if (typeof value !== "string") return problem("must be a string")
      if (value === "********") return // a masked secret sent back keeps the stored value
      if (rules.minLength !== undefined && value.length < rules.minLength) problem(`must be at least ${rules.minLength} characters`)
      if (rules.maxLength !== undefined && value.length > rules.maxLength) problem(`must be at most ${rules.maxLength} characters`)
      const pattern = rules.pattern === undefined ? undefined : patternOf(rules.pattern)
      if (pattern !== undefined && !pattern.test(value)) problem(`must match the pattern ${rules.pattern}`)
      const format = rules.format === undefined ? undefined : formats[rules.format]
      if (format !== undefined && !format.test(value)) problem(`must be a valid ${rules.format}`)
      return
    }
    case "number": {
      if (typeof value !== "number" || !Number.isFinite(value)) return problem("must be a number")
      if (rules.integer === true && !Number.isInteger(value)) problem("must be a whole number")
      if (rules.minimum !== undefined && (rules.exclusiveMinimum === true ? value <= rules.minimum : value < rules.minimum)) {
        problem(`must be ${rules.exclusiveMinimum === true ? "greater than" : "at least"} ${rules.minimum}`)
      }
      if (rules.maximum !== undefined && (rules.exclusiveMaximum === true ? value >= rules.maximum : value > rules.maximum)) {
        problem(`must be ${rules.exclusiveMaximum === true ? "less than" : "at most"} ${rules.maximum}`)
      }
      if (rules.multipleOf !== undefined && rules.multipleOf > 0) {
        const q = value / rules.multipleOf
        if (Math.abs(q - Math.round(q)) > 1e-9) problem(`must be a multiple of ${rules.multipleOf}`)
      }
      return
    }
    case "boolean":
      if (typeof value !== "boolean") problem("must be true or false")
      return
    case "datetime": {
      if (typeof value !== "string" || Number.isNaN(Date.parse(value))) return problem("must be an ISO 8601 date-time")
      const at = Date.parse(value)
      if (rules.earliestDate !== undefined && at < Date.parse(rules.earliestDate)) problem(`must not be before ${rules.earliestDate}`)
      if (rules.latestDate !== undefined && at > Date.parse(rules.latestDate)) problem(`must not be after ${rules.latestDate}`)
      return
    }
    case "reference":
      if (rules.relationship === "many-to-many") {
        if (!Array.isArray(value) || !value.every((v) => typeof v === "string")) problem("must be an array of record ids")
      } else if (typeof value !== "string") problem("must be a record id")
      return
    case "array": {
      if (!Array.isArray(value)) return problem("must be an array")
      if (rules.minItems !== undefined && value.length < rules.minItems) problem(`must have at least ${rules.minItems} items`)
      if (rules.maxItems !== undefined && value.length > rules.maxItems) problem(`must have at most ${rules.maxItems} items`)
      if (rules.uniqueItems === true && new Set(value.map((v) => JSON.stringify(v))).size !== value.length) {
        problem("must not repeat items")
      }
      const items = rules.items
      if (items !== undefined && items.type !== "object") {
        value.forEach((v, i) => checkValue({ name: rules.name, ...items }, v, `${field}[${i}]`, out))
      }
      return
    }
    case "object": {
      if (!isObject(value)) return problem("must be an object")
      if (rules.properties !== undefined) checkFields(rules.properties, value, field, out)
      return
    }
  }
}

const checkFields = (properties: ReadonlyArray<PropertyRules>, data: Record<string, unknown>, prefix: string, out: Array<FieldProblem>) => {
  for (const rules of properties) {
    if (rules.expression !== undefined) continue // computed: the server fills it
    const field = `${prefix}.${rules.name}`
    const value = data[rules.name]
    if (value === undefined) {
      if (rules.required === true && rules.autoIncrement === undefined) out.push({ field, message: "is required" })
      continue
    }
    checkValue(rules, value, field, out)
  }
}

/** The problems of `data` under `properties`; `strict` also refuses fields no property declares. */
export const checkRecord = (
  properties: ReadonlyArray<PropertyRules>,
  data: Record<string, unknown>,
  strict: boolean
): Array<FieldProblem> => {
  const out: Array<FieldProblem> = []
  checkFields(properties, data, "data", out)
  if (strict) {
    const known = new Set(properties.map((p) => p.name))
    for (const key of Object.keys(data)) {
      if (!known.has(key)) out.push({ field: `data.${key}`, message: "is not a property of this structure" })
    }
  }
  return out
}
