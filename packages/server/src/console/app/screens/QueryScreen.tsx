// Query: a statement of the query language run through POST /query, with parameters; records or aggregate rows in a
// table (or as JSON), with the time the request took.
import { useState } from "preact/hooks"
import { useSession } from "../Session.tsx"
import { Button, cellText, Empty, ErrorBox, Field, href, Json, JsonInput, PageHead, useAction, useAsync } from "../Ui.tsx"
import type { StructureList } from "../lib/Types.ts"

interface Outcome {
  readonly rows: ReadonlyArray<Record<string, unknown>>
  readonly ms: number
  readonly statement: string
}

const isRecord = (row: Record<string, unknown>) =>
  typeof row.id === "string" && typeof row.data === "object" && row.data !== null && typeof row.structureId === "string"

const ResultTable = ({ rows }: { rows: ReadonlyArray<Record<string, unknown>> }) => {
  const records = rows.every(isRecord)
  const columns = records
    ? [...new Set(rows.flatMap((r) => Object.keys(r.data as Record<string, unknown>)))].slice(0, 20)
    : [...new Set(rows.flatMap((r) => Object.keys(r)))]
  return (
    <div class="table-wrap">
      <table class="table" data-testid="query-results">
        <thead>
          <tr>
            {records && <th>id</th>}
            {columns.map((c) => (
              <th key={c}>{c}</th>
            ))}
          </tr>
        </thead>
        <tbody>
          {rows.map((r, i) => (
            <tr key={i}>
              {records && (
                <td>
                  <a href={href("records", String(r.structureId), String(r.id))}>
                    <code>{String(r.id).slice(0, 8)}</code>
                  </a>
                </td>
              )}
              {columns.map((c) => (
                <td key={c}>{cellText(records ? (r.data as Record<string, unknown>)[c] : r[c])}</td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  )
}

export const QueryScreen = () => {
  const { api } = useSession()
  const structures = useAsync(() => api.get<StructureList>("/structures", { limit: 1 }), [])
  const first = structures.state.data?.data[0]?.recordSlug
  const [statement, setStatement] = useState<string | undefined>(undefined)
  const [parameters, setParameters] = useState<unknown>(undefined)
  const [includeDeleted, setIncludeDeleted] = useState(false)
  const [asJson, setAsJson] = useState(false)
  const [outcome, setOutcome] = useState<Outcome | undefined>(undefined)
  const action = useAction()
  const text = statement ?? (first === undefined ? "" : `FROM ${first} LIMIT 20`)

  const run = () =>
    action.run(async () => {
      setOutcome(undefined)
      const start = performance.now()
      const answer = await api.post<{ results: ReadonlyArray<Record<string, unknown>> }>("/query", {
        query: text,
        ...(parameters === undefined ? {} : { parameters }),
        includeDeleted
      })
      setOutcome({ rows: answer.results, ms: performance.now() - start, statement: text })
    })

  return (
    <section>
      <PageHead title="Query" />
      <form
        onSubmit={(e) => {
          e.preventDefault()
          void run()
        }}
      >
        <Field label="Statement" hint="SELECT … FROM structure WHERE … GROUP BY … ORDER BY … LIMIT … · Ctrl+Enter runs">
          <textarea
            class="code"
            name="query"
            rows={5}
            spellcheck={false}
            value={text}
            placeholder="SELECT category, COUNT(*) AS n FROM products GROUP BY category"
            onInput={(e) => setStatement(e.currentTarget.value)}
            onKeyDown={(e) => {
              if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) {
                e.preventDefault()
                void run()
              }
            }}
          />
        </Field>
        <JsonInput
          label="Parameters (JSON object, for :name)"
          rows={2}
          value={parameters}
          onChange={setParameters}
          placeholder='{"min": 100}'
        />
        <div class="toolbar">
          <label class="check">
            <input type="checkbox" checked={includeDeleted} onChange={(e) => setIncludeDeleted(e.currentTarget.checked)} />
            Include deleted records
          </label>
          <label class="check">
            <input type="checkbox" checked={asJson} onChange={(e) => setAsJson(e.currentTarget.checked)} />
            Show JSON
          </label>
          <Button type="submit" kind="primary" busy={action.busy}>
            Run
          </Button>
        </div>
      </form>
      <ErrorBox error={action.error} title="The query failed" />
      {outcome !== undefined && (
        <div class="query-outcome">
          <p class="muted" data-testid="query-summary">
            {outcome.rows.length} row{outcome.rows.length === 1 ? "" : "s"} in {Math.round(outcome.ms)} ms
          </p>
          {outcome.rows.length === 0 ? (
            <Empty>No rows.</Empty>
          ) : asJson ? (
            <Json value={outcome.rows} />
          ) : (
            <ResultTable rows={outcome.rows} />
          )}
        </div>
      )}
    </section>
  )
}
