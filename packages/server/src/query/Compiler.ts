// Compiles the query AST to Effect `sql` fragments over `records r`, one module per phase: field resolution and
// the SQL of a field (`CompileFields`), literals and their binding (`CompileValues`), conditions (`CompileWhere`),
// sorting and cursors (`CompileOrder`) and aggregation (`CompileAggregate`). This entry is what the rest of the
// server imports.
export {
  type CompileContext,
  type Mode,
  type PropertyDefinitionLike,
  type PropertyInfo,
  propertyMap,
  type ResolvedField,
  resolveField,
  type ScalarType
} from "./CompileFields.ts"
export { isDateTime } from "./CompileValues.ts"
export { MIN_FULL_TEXT_LENGTH } from "./CompileSearch.ts"
export { compileWhere, MAX_CONDITION_TERMS, MAX_LIST_VALUES } from "./CompileWhere.ts"
export { CURSOR_COLUMN, compileCursor, compileCursorSelect, compileOrderBy, encodeCursor, MAX_SORT_KEYS } from "./CompileOrder.ts"
export {
  type AggregateSpec,
  type CompiledAggregate,
  compileAggregate,
  MAX_GROUP_FIELDS,
  MAX_SELECT_ITEMS
} from "./CompileAggregate.ts"
