// Property-based tests of the record validator: random structures (each checked by the definition rules), random
// records valid for them, and single mutations that break exactly one rule of one field.
import type { PropertyDefinition } from "@troupe/api/structures/Structure"
import { describe, expect, it } from "@effect/vitest"
import fc from "fast-check"
import { checkStructure } from "./rules.ts"
import { compileValidator } from "./Validator.ts"

/** A broken value for a field and the path (below `data.<field>`) that must be named. */
interface Broken {
  readonly value: unknown
  readonly path: string
}

type WithoutName<T> = T extends unknown ? Omit<T, "name"> : never

/** A property without its name, how to make valid values, and how to break one rule at a time. */
interface Spec {
  readonly def: WithoutName<PropertyDefinition>
  readonly value: fc.Arbitrary<unknown>
  /** Each breaker gets the field's valid value (undefined when absent) and may decline (undefined). */
  readonly breakers: ReadonlyArray<(valid: unknown) => Broken | undefined>
}

const whole = (value: unknown): Broken => ({ value, path: "" })

// Single code points, some outside the BMP, so lengths are checked in characters.
const char = fc.constantFrom("a", "b", "z", "0", "-", "é", "ß", "😀", "中")

const stringSpec: fc.Arbitrary<Spec> = fc.oneof(
  // Lengths.
  fc.tuple(fc.nat(6), fc.nat(10)).map(([a, extra]): Spec => {
    const min = a
    const max = a + extra
    return {
      def: { type: "string", minLength: min, maxLength: max },
      value: fc.string({ unit: char, minLength: min, maxLength: max }),
      breakers: [() => whole("x".repeat(max + 1)), () => (min > 0 ? whole("😀".repeat(min - 1)) : undefined), () => whole(42)]
    }
  }),
  // Formats.
  fc.constantFrom("email", "url", "uuid", "date", "datetime").map((format): Spec => {
    const label = fc.stringMatching(/^[a-z][a-z0-9]{0,8}$/)
    const instant = fc.date({ min: new Date("1900-01-01T00:00:00Z"), max: new Date("2100-01-01T00:00:00Z"), noInvalidDate: true })
    const value = {
      email: fc.tuple(label, label).map(([a, b]) => `${a}@${b}.com`),
      url: fc.tuple(label, label).map(([a, b]) => `https://${a}.example.org/${b}?q=1`),
      uuid: fc.uuid(),
      date: instant.map((d) => d.toISOString().slice(0, 10)),
      datetime: instant.map((d) => d.toISOString())
    }[format]
    const bad = { email: "a@", url: "no scheme", uuid: "1234", date: "2023-02-29", datetime: "2024-05-01T25:00:00Z" }[format]
    return { def: { type: "string", format }, value, breakers: [() => whole(bad), () => whole(true)] }
  }),
  // Patterns, native and RE2 ones.
  fc.constantFrom("^[a-z]{3,8}$", "^[A-Z]{2}-\\d{3}$", "^(red|green|blue)$", "^[a-z]+(-[a-z]+)*$").map(
    (pattern): Spec => ({
      def: { type: "string", pattern },
      value: fc.stringMatching(new RegExp(pattern)),
      breakers: [() => whole("!!"), () => whole(["a"])]
    })
  ),
  // Enums and not.
  fc.uniqueArray(fc.stringMatching(/^[a-z]{1,6}$/), { minLength: 1, maxLength: 5 }).map(
    (values): Spec => ({
      def: { type: "string", enum: values, not: [`${values.join("")}x`] },
      value: fc.constantFrom(...values),
      breakers: [() => whole(`${values.join("")}y`), () => whole(`${values.join("")}x`)]
    })
  )
)

const numberSpec: fc.Arbitrary<Spec> = fc.oneof(
  // Integer range with exclusive flags.
  fc
    .tuple(fc.integer({ min: -1000, max: 1000 }), fc.integer({ min: 4, max: 1000 }), fc.boolean(), fc.boolean())
    .map(([min, span, exMin, exMax]): Spec => {
      const max = min + span
      return {
        def: { type: "number", integer: true, minimum: min, maximum: max, exclusiveMinimum: exMin, exclusiveMaximum: exMax },
        value: fc.integer({ min: exMin ? min + 1 : min, max: exMax ? max - 1 : max }),
        breakers: [() => whole(exMin ? min : min - 1), () => whole(exMax ? max : max + 1), () => whole(min + 2.5), () => whole("1")]
      }
    }),
  // Float range.
  fc.tuple(fc.double({ min: -1e6, max: 1e6, noNaN: true }), fc.double({ min: 1, max: 1e6, noNaN: true })).map(([min, span]): Spec => {
    const max = min + span
    return {
      def: { type: "number", minimum: min, maximum: max },
      value: fc.double({ min, max, noNaN: true }),
      breakers: [() => whole(min - 1), () => whole(max + 1), () => whole("NaN")]
    }
  }),
  // multipleOf.
  fc.constantFrom(2, 5, 0.5, 0.1, 0.25).map(
    (m): Spec => ({
      def: { type: "number", multipleOf: m },
      value: fc.integer({ min: -10_000, max: 10_000 }).map((k) => k * m),
      breakers: [() => whole(m * 3 + m / 2)]
    })
  ),
  // Enum.
  fc.uniqueArray(fc.integer({ min: -50, max: 50 }), { minLength: 1, maxLength: 5 }).map(
    (values): Spec => ({
      def: { type: "number", enum: values },
      value: fc.constantFrom(...values),
      breakers: [() => whole(Math.max(...values) + 1)]
    })
  )
)

const booleanSpec: fc.Arbitrary<Spec> = fc.constant({
  def: { type: "boolean" },
  value: fc.boolean(),
  breakers: [() => whole("true"), () => whole(1)]
})

const datetimeSpec: fc.Arbitrary<Spec> = fc
  .tuple(
    fc.integer({ min: Date.UTC(1950, 0, 1), max: Date.UTC(2050, 0, 1) }),
    fc.integer({ min: 10_000, max: 10 * 365 * 86_400_000 }),
    fc.boolean(),
    fc.boolean()
  )
  .map(([earliest, span, exE, exL]): Spec => {
    const latest = earliest + span
    const iso = (t: number) => new Date(t).toISOString()
    return {
      def: {
        type: "datetime",
        earliestDate: iso(earliest),
        latestDate: iso(latest),
        exclusiveEarliest: exE,
        exclusiveLatest: exL
      },
      value: fc.integer({ min: earliest + 1, max: latest - 1 }).map(iso),
      breakers: [
        () => whole(iso(exE ? earliest : earliest - 1)),
        () => whole(iso(exL ? latest : latest + 1)),
        () => whole("2024-13-45"),
        () => whole(earliest)
      ]
    }
  })

const referenceSpec: fc.Arbitrary<Spec> = fc.constantFrom("many-to-one", "many-to-many").map(
  (relationship): Spec =>
    relationship === "many-to-many"
      ? {
          def: { type: "reference", target: "targets", relationship, onDelete: "cascade" },
          value: fc.uniqueArray(fc.uuid(), { maxLength: 4 }),
          breakers: [() => whole("id"), () => whole([1])]
        }
      : {
          def: { type: "reference", target: "targets", relationship, onDelete: "restrict" },
          value: fc.uuid(),
          breakers: [() => whole(7), () => whole("")]
        }
)

const scalarArraySpec: fc.Arbitrary<Spec> = fc
  .tuple(fc.nat(2), fc.integer({ min: 3, max: 6 }), fc.boolean())
  .map(([min, max, unique]): Spec => {
    const item = fc.string({ unit: char, maxLength: 5 })
    return {
      def: { type: "array", items: { type: "string", maxLength: 5 }, minItems: min, maxItems: max, uniqueItems: unique },
      value: unique ? fc.uniqueArray(item, { minLength: min, maxLength: max }) : fc.array(item, { minLength: min, maxLength: max }),
      breakers: [
        () => whole(Array.from({ length: max + 1 }, (_, i) => `v${i}`)),
        () => (min > 0 ? whole([]) : undefined),
        () => whole("not an array"),
        (valid) => {
          const a = Array.isArray(valid) && valid.length > 0 ? [...valid] : ["ok"]
          const i = a.length - 1
          a[i] = 7
          return a.length >= min ? { value: a, path: `[${i}]` } : undefined
        },
        (valid) => {
          const a = Array.isArray(valid) && valid.length > 0 ? [...valid] : ["ok"]
          const i = a.length - 1
          a[i] = "toolong"
          return a.length >= min ? { value: a, path: `[${i}]` } : undefined
        },
        (valid) => {
          if (!unique || !Array.isArray(valid) || valid.length < 2) return undefined
          const a = [...valid]
          a[a.length - 1] = a[0]
          return { value: a, path: `[${a.length - 1}]` }
        }
      ]
    }
  })

const lineItem = fc.record({ sku: fc.stringMatching(/^[A-Z0-9]{1,8}$/), qty: fc.nat(100) }, { requiredKeys: ["sku"] })

const objectArraySpec: fc.Arbitrary<Spec> = fc.constant({
  def: {
    type: "array",
    items: { type: "object" },
    itemSchema: [
      { name: "sku", type: "string", required: true, maxLength: 8 },
      { name: "qty", type: "number", integer: true, minimum: 0 }
    ]
  },
  value: fc.array(lineItem, { maxLength: 4 }),
  breakers: [
    (valid) => {
      const a: Array<unknown> = Array.isArray(valid) && valid.length > 0 ? [...valid] : [{ sku: "A" }]
      const i = a.length - 1
      a[i] = { qty: 1 }
      return { value: a, path: `[${i}].sku` }
    },
    (valid) => {
      const a: Array<unknown> = Array.isArray(valid) && valid.length > 0 ? [...valid] : [{ sku: "A" }]
      a[0] = { ...(a[0] as object), extra: true }
      return { value: a, path: "[0].extra" }
    },
    (valid) => {
      const a: Array<unknown> = Array.isArray(valid) && valid.length > 0 ? [...valid] : [{ sku: "A" }]
      a[0] = { ...(a[0] as object), qty: -1 }
      return { value: a, path: "[0].qty" }
    }
  ]
})

const objectSpec: fc.Arbitrary<Spec> = fc.constant({
  def: {
    type: "object",
    isStrict: true,
    properties: [
      { name: "city", type: "string", required: true, minLength: 1 },
      { name: "zip", type: "string", pattern: "^\\d{5}$" }
    ]
  },
  value: fc.record({ city: fc.stringMatching(/^[A-Za-z]{1,10}$/), zip: fc.stringMatching(/^\d{5}$/) }, { requiredKeys: ["city"] }),
  breakers: [
    () => ({ value: { zip: "12345" }, path: ".city" }),
    (valid) => ({ value: { city: "X", ...(valid as object), extra: 1 }, path: ".extra" }),
    (valid) => ({ value: { city: "X", ...(valid as object), zip: "1234" }, path: ".zip" }),
    () => whole([])
  ]
})

interface Field {
  readonly name: string
  readonly spec: Spec
  readonly required: boolean
  readonly nullable: boolean
}

const fieldsArb: fc.Arbitrary<Array<Field>> = fc
  .array(
    fc.tuple(
      fc.oneof(stringSpec, numberSpec, booleanSpec, datetimeSpec, referenceSpec, scalarArraySpec, objectArraySpec, objectSpec),
      fc.boolean(),
      fc.boolean()
    ),
    { minLength: 1, maxLength: 8 }
  )
  .map((list) => list.map(([spec, required, nullable], i) => ({ name: `f${i}`, spec, required, nullable })))

const definitionOf = (fields: ReadonlyArray<Field>): Array<PropertyDefinition> =>
  fields.map((f) => ({ ...f.spec.def, name: f.name, required: f.required, nullable: f.nullable }) as PropertyDefinition)

const recordArb = (fields: ReadonlyArray<Field>): fc.Arbitrary<Record<string, unknown>> =>
  fc
    .tuple(
      ...fields.map((f) => {
        const value = f.nullable
          ? fc.oneof({ weight: 4, arbitrary: f.spec.value }, { weight: 1, arbitrary: fc.constant(null) })
          : f.spec.value
        return f.required ? value : fc.option(value, { nil: undefined })
      })
    )
    .map((values) => {
      const out: Record<string, unknown> = {}
      values.forEach((v, i) => {
        if (v !== undefined) out[fields[i]!.name] = v
      })
      return out
    })

const workspace = { findStructureBySlug: (slug: string) => (slug === "targets" ? { recordSlug: "targets", properties: [] } : undefined) }

const scenario = fieldsArb.chain((fields) => fc.tuple(fc.constant(fields), recordArb(fields), fc.nat(), fc.nat()))

describe("Validator (property-based)", () => {
  it("generated structures pass the definition rules, and generated valid records pass", () => {
    fc.assert(
      fc.property(scenario, ([fields, record]) => {
        const properties = definitionOf(fields)
        expect(checkStructure({ name: "Generated", properties }, workspace)).toStrictEqual([])
        const v = compileValidator({ properties, schemaDiscoveryMode: "strict" })
        const r = v.validate(record, { mode: "create" })
        if (!r.ok) throw new Error(`valid record refused: ${JSON.stringify(r.errors)} for ${JSON.stringify(record)}`)
        expect(r.data).toStrictEqual(record)
      }),
      { numRuns: 300 }
    )
  })

  it("a single rule-breaking mutation fails, naming exactly that field", () => {
    fc.assert(
      fc.property(scenario, ([fields, record, pickField, pickBreaker]) => {
        const properties = definitionOf(fields)
        const v = compileValidator({ properties, schemaDiscoveryMode: "strict" })
        const field = fields[pickField % fields.length]!
        const valid = record[field.name]
        // Every way to break this field: its type's rules, plus presence and null where they apply.
        const options: Array<{ apply: (r: Record<string, unknown>) => void; path: string }> = []
        for (const breaker of field.spec.breakers) {
          const broken = breaker(valid)
          if (broken !== undefined) {
            options.push({ apply: (r) => void (r[field.name] = broken.value), path: `data.${field.name}${broken.path}` })
          }
        }
        if (field.required) options.push({ apply: (r) => void delete r[field.name], path: `data.${field.name}` })
        if (!field.nullable) options.push({ apply: (r) => void (r[field.name] = null), path: `data.${field.name}` })
        options.push({ apply: (r) => void (r.undeclaredField = 1), path: "data.undeclaredField" })
        const mutation = options[pickBreaker % options.length]!

        const mutated = structuredClone(record)
        mutation.apply(mutated)
        const r = v.validate(mutated, { mode: "create" })
        if (r.ok) throw new Error(`mutation at ${mutation.path} passed: ${JSON.stringify(mutated)}`)
        expect(
          r.errors.some((e) => e.field === mutation.path),
          `${mutation.path} not named in ${JSON.stringify(r.errors)}`
        ).toBe(true)
        for (const e of r.errors) {
          expect(
            e.field === mutation.path || e.field.startsWith(`data.${field.name}`) || mutation.path === "data.undeclaredField",
            `unrelated problem ${JSON.stringify(e)} for mutation at ${mutation.path}`
          ).toBe(true)
        }
      }),
      { numRuns: 600 }
    )
  })

  it("update: patching one valid field keeps the record valid; patching one broken field names it", () => {
    fc.assert(
      fc.property(scenario, ([fields, record, pickField]) => {
        const properties = definitionOf(fields)
        const v = compileValidator({ properties, schemaDiscoveryMode: "strict" })
        const field = fields[pickField % fields.length]!
        const valid = record[field.name]
        if (valid !== undefined) {
          const r = v.validate({ [field.name]: valid }, { mode: "update", previous: record })
          expect(r.ok).toBe(true)
        }
        const broken = field.spec.breakers.map((b) => b(valid)).find((b) => b !== undefined)
        if (broken === undefined) return
        const r = v.validate({ [field.name]: broken.value }, { mode: "update", previous: record })
        expect(r.ok).toBe(false)
        if (!r.ok) expect(r.errors.every((e) => e.field.startsWith(`data.${field.name}`))).toBe(true)
      }),
      { numRuns: 300 }
    )
  })
})
