// What a structure searches (CONTRACT §8.2, docs/search.md): its `searchFields` ({name, weight 1-4}) and
// `searchLanguage`; unset, `defaultSearchField` with weight 1, else every string property, never a secret one. The
// result is kept in `search_configs` (migration 0011) in the transaction that stores the structure; the records'
// row trigger reads it, and a change queues a re-index of the structure's records (search/Reindexer.ts).
import type { Structure } from "@troupe/api/structures/Structure"
import { Effect } from "effect"
import type { SqlClient } from "effect/sql"
import { isObject } from "../lib/JsonPath.ts"

/** The text-search configurations PostgreSQL and PGlite both ship. */
export const SEARCH_LANGUAGES: ReadonlySet<string> = new Set(
  (
    "arabic,armenian,basque,catalan,danish,dutch,english,finnish,french,german,greek,hindi,hungarian,indonesian,irish," +
    "italian,lithuanian,nepali,norwegian,portuguese,romanian,russian,serbian,simple,spanish,swedish,tamil,turkish,yiddish"
  ).split(",")
)

/** At most this many search fields per structure. */
export const MAX_SEARCH_FIELDS = 20

/** The tsvector label of a weight: 4 is A (the heaviest), 1 is D. */
const labels = ["D", "C", "B", "A"] as const
export type Label = (typeof labels)[number]

/** Problems of a create or update body's `searchFields` and `searchLanguage`, by field, against its properties. */
export const searchSettingProblems = (input: Record<string, unknown>): Array<{ field: string; message: string }> => {
  const problems: Array<{ field: string; message: string }> = []
  const properties = Array.isArray(input.properties) ? input.properties.filter(isObject) : []
  const language = input.searchLanguage
  if (language !== undefined && language !== null && (typeof language !== "string" || !SEARCH_LANGUAGES.has(language))) {
    problems.push({
      field: "searchLanguage",
      message: `must be one of ${[...SEARCH_LANGUAGES].join(", ")}`
    })
  }
  const fields = input.searchFields
  if (fields === undefined || fields === null) return problems
  if (!Array.isArray(fields)) return [...problems, { field: "searchFields", message: "must be an array of {name, weight}" }]
  if (fields.length > MAX_SEARCH_FIELDS) problems.push({ field: "searchFields", message: `must name at most ${MAX_SEARCH_FIELDS} fields` })
  const seen = new Set<string>()
  fields.forEach((f, i) => {
    const at = `searchFields[${i}]`
    if (!isObject(f) || typeof f.name !== "string") return problems.push({ field: at, message: "must be {name, weight}" })
    const p = properties.find((q) => q.name === f.name)
    if (p === undefined) problems.push({ field: `${at}.name`, message: `'${f.name}' is not a property of this structure` })
    else if (p.type !== "string") problems.push({ field: `${at}.name`, message: `'${f.name}' is not a string property` })
    else if (p.isSecret === true) problems.push({ field: `${at}.name`, message: `'${f.name}' is secret: secrets are never searched` })
    if (seen.has(f.name)) problems.push({ field: `${at}.name`, message: `'${f.name}' is named twice` })
    seen.add(f.name)
    const w = f.weight
    if (w !== undefined && (typeof w !== "number" || !Number.isInteger(w) || w < 1 || w > 4)) {
      problems.push({ field: `${at}.weight`, message: "must be an integer from 1 to 4" })
    }
    return undefined
  })
  return problems
}

type Searchable = Pick<Structure, "properties" | "defaultSearchField" | "searchFields" | "searchLanguage">

/** The fields a structure's records are indexed on, with their labels (CONTRACT §8.2's fallback). */
export const searchedFields = (s: Searchable): Array<{ readonly name: string; readonly weight: Label }> => {
  const strings = s.properties.filter((p) => p.type === "string" && !(p as { isSecret?: boolean }).isSecret).map((p) => p.name)
  if (s.searchFields !== undefined && s.searchFields !== null && s.searchFields.length > 0) {
    return s.searchFields
      .filter((f) => strings.includes(f.name))
      .map((f) => ({ name: f.name, weight: labels[Math.min(4, Math.max(1, f.weight ?? 1)) - 1]! }))
  }
  const named = s.defaultSearchField
  if (named !== undefined && named !== null && strings.includes(named)) return [{ name: named, weight: "D" }]
  return strings.map((name) => ({ name, weight: "D" as const }))
}

/**
 * Whether the structure names what it searches (`searchFields`, or a `defaultSearchField` that is a searchable
 * string): then the lists' `search=` without fields reads the index. Otherwise it keeps its meaning, every string
 * value of the data (arrays and nested objects too), which the index of top-level properties does not hold.
 */
export const searchesDeclared = (s: Searchable): boolean =>
  ((s.searchFields?.length ?? 0) > 0 || (s.defaultSearchField !== undefined && s.defaultSearchField !== null)) &&
  searchedFields(s).length > 0

/** The structure's text-search configuration. */
export const searchLanguageOf = (s: Searchable): string =>
  s.searchLanguage !== undefined && s.searchLanguage !== null && SEARCH_LANGUAGES.has(s.searchLanguage) ? s.searchLanguage : "simple"

const ZERO_UUID = "00000000-0000-0000-0000-000000000000"

/**
 * Stores what `s` searches, inside the caller's transaction. A new structure has no records to index; a changed
 * configuration re-indexes the structure's records from the start (an unchanged one leaves any re-index running).
 */
export const syncSearchConfig = (sql: SqlClient.SqlClient, s: Structure, isNew: boolean) =>
  sql`INSERT INTO search_configs (structure_id, language, fields, reindex_after)
    VALUES (${s.id}, ${searchLanguageOf(s)}::regconfig, ${JSON.stringify(searchedFields(s))}::jsonb, ${isNew ? null : ZERO_UUID})
    ON CONFLICT (structure_id) DO UPDATE SET language = EXCLUDED.language, fields = EXCLUDED.fields,
      reindex_after = ${ZERO_UUID}, updated_at = now()
    WHERE search_configs.language <> EXCLUDED.language OR search_configs.fields <> EXCLUDED.fields`.pipe(Effect.asVoid)
