// How a structure is stored: one row with the columns queries need and the rest of the definition as one jsonb
// document.
import type { Structure, StructureMetadata } from "@troupe/api/structures/Structure"
import { iso, json, num } from "../lib/rows.ts"
import { isObject } from "../lib/JsonPath.ts"

/** Columns stored outside the definition document. */
export const rowColumns = [
  "id",
  "workspaceSlug",
  "recordSlug",
  "name",
  "isDeleted",
  "version",
  "createdAt",
  "updatedAt",
  "createdBy",
  "lastUpdatedBy"
] as const

export const defaultMetadata: StructureMetadata = {
  recordWritesLocked: false,
  structureWritesLocked: false,
  migrationInProgress: false
}

export const toStructure = (row: any): Structure => {
  const doc = json<Record<string, unknown>>(row.definition)
  return {
    ...doc,
    metadata: { ...defaultMetadata, ...(doc.metadata as object | undefined) },
    id: row.id,
    workspaceSlug: row.workspace,
    recordSlug: row.record_slug,
    name: row.name,
    isDeleted: row.is_deleted,
    version: num(row.version),
    createdAt: iso(row.created_at),
    updatedAt: iso(row.updated_at),
    createdBy: row.created_by ?? null,
    lastUpdatedBy: row.updated_by ?? null
  } as Structure
}

export const definitionOf = (s: Record<string, unknown>): Record<string, unknown> => {
  const doc: Record<string, unknown> = { ...s }
  for (const key of rowColumns) delete doc[key]
  return doc
}

/** JSON with object keys sorted, to compare definitions whatever order their keys were written in. */
export const canonical = (v: unknown): string =>
  JSON.stringify(v, (_, x) =>
    isObject(x)
      ? Object.fromEntries(
          Object.keys(x)
            .sort()
            .map((k) => [k, x[k]])
        )
      : x
  )
