// The problem list the structure rules fill (rules.ts, PropertyRules.ts, StructureReferences.ts), with its readers
// of typed optional fields, and the types those rule files share: a problem, another structure, the workspace context.

export interface DefinitionProblem {
  readonly field: string
  readonly message: string
}

/** What the rules need to know about another structure of the workspace. */
export interface StructureLike {
  readonly recordSlug: string
  readonly properties: ReadonlyArray<unknown>
}

export interface RuleContext {
  /** A live structure of the same workspace by recordSlug (soft-deleted ones should not be found). */
  readonly findStructureBySlug: (slug: string) => StructureLike | undefined
  /** recordSlug of the structure being updated; on create it follows from the input. */
  readonly selfSlug?: string | undefined
}

/** Levels of object / array-of-object nesting a definition may declare. */
export const MAX_DEFINITION_DEPTH = 8

export type Raw = Record<string, unknown>

export const quote = (values: ReadonlyArray<string>) => values.map((v) => `'${v}'`).join(", ")

const join = (at: string, key: string) => (at === "" ? key : `${at}.${key}`)

export class Problems {
  readonly list: Array<DefinitionProblem> = []
  add(field: string, message: string): undefined {
    this.list.push({ field, message })
    return undefined
  }
  get size(): number {
    return this.list.length
  }

  // Typed optional fields: absent is fine, anything else must have the right type.
  bool(o: Raw, key: string, at: string): boolean | undefined {
    const v = o[key]
    if (v === undefined) return undefined
    if (typeof v !== "boolean") return this.add(join(at, key), "must be a boolean")
    return v
  }
  str(o: Raw, key: string, at: string): string | undefined {
    const v = o[key]
    if (v === undefined) return undefined
    if (typeof v !== "string") return this.add(join(at, key), "must be a string")
    return v
  }
  num(o: Raw, key: string, at: string, opts: { integer?: boolean; min?: number; positive?: boolean } = {}): number | undefined {
    const v = o[key]
    if (v === undefined) return undefined
    const field = join(at, key)
    if (typeof v !== "number" || !Number.isFinite(v)) return this.add(field, "must be a finite number")
    if (opts.integer === true && !Number.isInteger(v)) return this.add(field, "must be an integer")
    if (opts.positive === true && v <= 0) return this.add(field, "must be greater than 0")
    if (opts.min !== undefined && v < opts.min) return this.add(field, `must be at least ${opts.min}`)
    return v
  }
  oneOf<const T extends string>(o: Raw, key: string, at: string, values: ReadonlyArray<T>): T | undefined {
    const v = o[key]
    if (v === undefined) return undefined
    if (typeof v !== "string" || !(values as ReadonlyArray<string>).includes(v)) {
      return this.add(join(at, key), `must be one of ${quote(values)}`)
    }
    return v as T
  }
  array(o: Raw, key: string, at: string): ReadonlyArray<unknown> | undefined {
    const v = o[key]
    if (v === undefined) return undefined
    if (!Array.isArray(v)) return this.add(join(at, key), "must be an array")
    return v
  }
}
