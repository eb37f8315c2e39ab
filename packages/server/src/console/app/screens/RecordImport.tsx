// Bulk import of a JSON or CSV file into one structure's records (the Records screen's Import dialog): the file is
// parsed in the browser and sent in chunks of 100 to the bulk endpoint, with a progress bar, a stop button and the
// per-record errors; "all or nothing" sends each batch atomically.
import { useState } from "preact/hooks"
import { ApiError } from "../lib/ApiClient.ts"
import { chunks, parseImport, type ParsedImport } from "../lib/ImportFile.ts"
import type { BulkResult, Structure } from "../lib/Types.ts"
import { useSession } from "../Session.tsx"
import { Button, Empty, ErrorBox, Json, Modal } from "../Ui.tsx"

interface ImportProgress {
  readonly done: number
  readonly created: number
  readonly failed: number
  readonly errors: ReadonlyArray<string>
  readonly finished: boolean
  readonly stopped?: string
}

const chunkSize = 100

export const ImportDialog = ({ structure, onClose }: { structure: Structure; onClose: () => void }) => {
  const { api } = useSession()
  const [parsed, setParsed] = useState<(ParsedImport & { readonly name: string }) | undefined>(undefined)
  const [progress, setProgress] = useState<ImportProgress | undefined>(undefined)
  const [cancel] = useState(() => ({ requested: false }))
  const [atomic, setAtomic] = useState(false)

  const start = async (records: ReadonlyArray<Record<string, unknown>>) => {
    cancel.requested = false
    let state: ImportProgress = { done: 0, created: 0, failed: 0, errors: [], finished: false }
    setProgress(state)
    const parts = chunks(records, chunkSize)
    for (let c = 0; c < parts.length; c++) {
      if (cancel.requested) {
        state = { ...state, finished: true, stopped: "Stopped: the rest was not sent." }
        break
      }
      const part = parts[c]!
      const offset = c * chunkSize
      const row = (index: number) => offset + index + 1
      try {
        const answer = await api.post<BulkResult>("/records/bulk", {
          structureId: structure.recordSlug,
          records: part.map((data) => ({ data })),
          options: { returnRecords: false, atomic }
        })
        const errors = (answer.errors ?? []).map(
          (e) => `item ${row(e.index)}: ${e.message}${(e.details ?? []).map((d) => ` · ${d.field}: ${d.message}`).join("")}`
        )
        state = {
          ...state,
          done: state.done + part.length,
          created: state.created + (answer.created ?? part.length - errors.length),
          failed: state.failed + (answer.failed ?? errors.length),
          errors: [...state.errors, ...errors]
        }
      } catch (e) {
        if (!(e instanceof ApiError) || e.status === 0 || e.status === 401 || e.status === 413 || e.status === 429) {
          state = { ...state, finished: true, stopped: `Stopped at item ${offset + 1}: ${e instanceof Error ? e.message : String(e)}` }
          break
        }
        // every item of the chunk failed (or, atomic, one did): nothing of it was written
        const errors =
          e.details.length > 0
            ? e.details.map((d) => {
                const m = /^records\[(\d+)\]\.?(.*)$/.exec(d.field)
                return m === null ? `${d.field}: ${d.message}` : `item ${row(Number(m[1]))}: ${m[2] ? `${m[2]}: ` : ""}${d.message}`
              })
            : [`items ${offset + 1}–${offset + part.length}: ${e.message}`]
        state = { ...state, done: state.done + part.length, failed: state.failed + part.length, errors: [...state.errors, ...errors] }
      }
      setProgress(state)
    }
    setProgress({ ...state, finished: true })
  }

  return (
    <Modal title={`Import into ${structure.name}`} onClose={onClose} wide>
      {progress === undefined && (
        <>
          <p>
            A JSON file (an array of objects, <code>{"{records: […]}"}</code> or one object per line) or a CSV file whose first row names
            the fields. CSV cells are typed by the structure's properties. Records are sent {chunkSize} at a time to{" "}
            <code>POST /records/bulk</code>.
          </p>
          <input
            type="file"
            name="import-file"
            accept=".json,.jsonl,.ndjson,.csv,application/json,text/csv"
            onChange={(e) => {
              const file = e.currentTarget.files?.[0]
              if (file === undefined) return
              void file.text().then((text) => setParsed({ ...parseImport(text, file.name, structure.properties), name: file.name }))
            }}
          />
          {parsed !== undefined && (
            <div class="import-preview">
              <p>
                <strong>{parsed.records.length}</strong> record{parsed.records.length === 1 ? "" : "s"} read from {parsed.name}
                {parsed.problems.length > 0 && `, ${parsed.problems.length} unreadable`}
              </p>
              {parsed.problems.length > 0 && (
                <ul class="error-details">
                  {parsed.problems.slice(0, 20).map((p, i) => (
                    <li key={i}>{p}</li>
                  ))}
                </ul>
              )}
              {parsed.records[0] !== undefined && <Json value={parsed.records[0]} />}
              <label class="check">
                <input type="checkbox" checked={atomic} onChange={(e) => setAtomic(e.currentTarget.checked)} />
                All or nothing per batch of {chunkSize} (atomic)
              </label>
              <Button kind="primary" perm="write:records" disabled={parsed.records.length === 0} onClick={() => void start(parsed.records)}>
                Import {parsed.records.length} records
              </Button>
            </div>
          )}
        </>
      )}
      {progress !== undefined && parsed !== undefined && (
        <div class="import-progress">
          <progress max={parsed.records.length} value={progress.done} aria-label="Import progress" />
          <p data-testid="import-status">
            {progress.done} of {parsed.records.length} sent · {progress.created} created · {progress.failed} failed
            {progress.finished ? " · finished" : ""}
          </p>
          {progress.stopped !== undefined && <ErrorBox error={new Error(progress.stopped)} />}
          {progress.errors.length > 0 && (
            <ul class="error-details">
              {progress.errors.slice(0, 100).map((e, i) => (
                <li key={i}>{e}</li>
              ))}
              {progress.errors.length > 100 && <li>… and {progress.errors.length - 100} more</li>}
            </ul>
          )}
          {progress.finished ? (
            <Button kind="primary" onClick={onClose}>
              Close
            </Button>
          ) : (
            <Button kind="danger" onClick={() => (cancel.requested = true)}>
              Stop
            </Button>
          )}
        </div>
      )}
      {parsed !== undefined && parsed.records.length === 0 && progress === undefined && <Empty>Nothing to import.</Empty>}
    </Modal>
  )
}
