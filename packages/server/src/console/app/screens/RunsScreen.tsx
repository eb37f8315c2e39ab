// Runs: filtered by function, trigger, status and source; one run's result, error, logs and lineage (the original
// it re-ran, its re-runs); a re-run with overrideParams and a reason, followed to its outcome.
import { useEffect, useState } from "preact/hooks"
import type { ComputeFunction, FunctionRun, Page, Trigger } from "../lib/Types.ts"
import { finished } from "../lib/Types.ts"
import { useSession } from "../Session.tsx"
import {
  AsyncView,
  Button,
  Can,
  ErrorBox,
  Field,
  hashQuery,
  href,
  Json,
  JsonInput,
  PageHead,
  Pager,
  StatusBadge,
  TableHead,
  useAction,
  useAsync,
  when
} from "../Ui.tsx"
import { FollowedRun, RunOutcome, useFollowRun } from "./RunView.tsx"

export const RunsScreen = ({ route }: { route: ReadonlyArray<string> }) =>
  route[0] === undefined ? <RunList /> : <RunDetail key={route[0]} id={route[0]} />

const statuses = ["queued", "running", "completed", "failed", "timed_out"]
const sources = ["manual", "trigger", "scheduled", "webhook", "rerun"]

const useNames = () => {
  const { api, can } = useSession()
  const functions = useAsync(
    () => api.get<{ functions: ReadonlyArray<ComputeFunction> }>("/compute-functions", { limit: 1000, sort: "name" }),
    []
  )
  const triggers = useAsync(
    () =>
      can("read:triggers")
        ? api.get<{ triggers: ReadonlyArray<Trigger> }>("/function-triggers", { limit: 1000 })
        : Promise.resolve({ triggers: [] }),
    []
  )
  return {
    functions: functions.state.data?.functions ?? [],
    triggers: triggers.state.data?.triggers ?? [],
    fn: (id: string | null) => (id === null ? "" : (functions.state.data?.functions.find((f) => f.id === id)?.name ?? id.slice(0, 8))),
    trigger: (id: string | null) => (id === null ? "" : (triggers.state.data?.triggers.find((t) => t.id === id)?.name ?? id.slice(0, 8)))
  }
}

const RunList = () => {
  const { api } = useSession()
  const names = useNames()
  const initial = hashQuery()
  const [filters, setFilters] = useState({
    functionId: initial.get("functionId") ?? "",
    triggerId: initial.get("triggerId") ?? "",
    status: initial.get("status") ?? "",
    executionSource: initial.get("executionSource") ?? ""
  })
  const [page, setPage] = useState(1)
  const [live, setLive] = useState(false)
  const { state, reload } = useAsync(() => api.get<Page<FunctionRun>>("/function-runs", { ...filters, page, limit: 50 }), [filters, page])
  useEffect(() => {
    if (!live) return
    const timer = setInterval(reload, 3000)
    return () => clearInterval(timer)
  }, [live])
  const set = (key: keyof typeof filters, value: string) => {
    setFilters((f) => ({ ...f, [key]: value }))
    setPage(1)
  }
  return (
    <section>
      <PageHead title="Runs">
        <label class="check">
          <input type="checkbox" checked={live} onChange={(e) => setLive(e.currentTarget.checked)} />
          Refresh every 3 s
        </label>
        <button type="button" class="btn btn-plain" onClick={reload}>
          Refresh
        </button>
      </PageHead>
      <div class="toolbar">
        <select aria-label="Function" value={filters.functionId} onChange={(e) => set("functionId", e.currentTarget.value)}>
          <option value="">every function</option>
          {names.functions.map((f) => (
            <option key={f.id} value={f.id}>
              {f.name}
            </option>
          ))}
        </select>
        <select aria-label="Trigger" value={filters.triggerId} onChange={(e) => set("triggerId", e.currentTarget.value)}>
          <option value="">every trigger</option>
          {names.triggers.map((t) => (
            <option key={t.id} value={t.id}>
              {t.name}
            </option>
          ))}
        </select>
        <select aria-label="Status" value={filters.status} onChange={(e) => set("status", e.currentTarget.value)}>
          <option value="">every status</option>
          {statuses.map((s) => (
            <option key={s} value={s}>
              {s}
            </option>
          ))}
        </select>
        <select aria-label="Source" value={filters.executionSource} onChange={(e) => set("executionSource", e.currentTarget.value)}>
          <option value="">every source</option>
          {sources.map((s) => (
            <option key={s} value={s}>
              {s}
            </option>
          ))}
        </select>
      </div>
      <AsyncView state={state} isEmpty={(d) => d.data.length === 0} empty="No runs match.">
        {(list) => (
          <>
            <table class="table" data-testid="runs">
              <TableHead columns={["Run", "Status", "Function", "Trigger", "Source", "Queued", "Duration"]} />
              <tbody>
                {list.data.map((r) => (
                  <tr key={r.id}>
                    <td>
                      <a href={href("runs", r.id)}>
                        <code>{r.id.slice(0, 8)}</code>
                      </a>
                      {r.isRerun && <span class="badge">re-run</span>}
                    </td>
                    <td>
                      <StatusBadge status={r.status} />
                    </td>
                    <td>{names.fn(r.functionId)}</td>
                    <td>{names.trigger(r.triggerId)}</td>
                    <td>{r.executionSource}</td>
                    <td>{when(r.queuedAt)}</td>
                    <td>{r.durationMs === null ? "" : `${Math.round(r.durationMs)} ms`}</td>
                  </tr>
                ))}
              </tbody>
            </table>
            <Pager page={page} pageSize={list.limit} total={list.total} onPage={setPage} />
          </>
        )}
      </AsyncView>
    </section>
  )
}

interface RerunHistory {
  readonly originalRunId: string
  readonly rerunCount: number
  readonly reruns: ReadonlyArray<FunctionRun>
}

const RunDetail = ({ id }: { id: string }) => {
  const { api } = useSession()
  const names = useNames()
  const { state, reload } = useAsync(() => api.get<FunctionRun>(`/function-runs/${id}`), [id])
  const history = useAsync(() => api.get<RerunHistory>(`/function-runs/${id}/rerun-history`), [id])
  const [overrideParams, setOverrideParams] = useState<unknown>(undefined)
  const [reason, setReason] = useState("")
  const [useLatestCode, setUseLatestCode] = useState(true)
  const rerun = useAction()
  const follower = useFollowRun()

  useEffect(() => {
    if (state.status !== "ready" || finished(state.data.status)) return
    const timer = setTimeout(reload, 1000)
    return () => clearTimeout(timer)
  }, [state])

  return (
    <AsyncView state={state}>
      {(run) => (
        <section>
          <PageHead
            title={
              <>
                Run <code>{run.id.slice(0, 8)}</code>
              </>
            }
          >
            <a class="btn btn-plain" href={href("runs")}>
              All runs
            </a>
          </PageHead>
          <dl class="facts">
            <dt>Function</dt>
            <dd>
              {run.functionId === null ? (
                run.functionVersion === null ? (
                  "test code (no saved function)"
                ) : (
                  "(deleted)"
                )
              ) : (
                <a href={href("functions", run.functionId)}>{names.fn(run.functionId)}</a>
              )}
            </dd>
            <dt>Trigger</dt>
            <dd>{run.triggerId === null ? "" : <a href={href("triggers", run.triggerId)}>{names.trigger(run.triggerId)}</a>}</dd>
            <dt>Started</dt>
            <dd>{when(run.startedAt)}</dd>
            <dt>Finished</dt>
            <dd>{when(run.finishedAt)}</dd>
            {run.scheduledFor !== null && (
              <>
                <dt>Scheduled for</dt>
                <dd>{when(run.scheduledFor)}</dd>
              </>
            )}
            <dt>CPU</dt>
            <dd>{run.cpuUsageSeconds === null ? "" : `${run.cpuUsageSeconds.toFixed(3)} s`}</dd>
            <dt>Code</dt>
            <dd>
              <code>{run.functionCodeHash?.slice(0, 12) ?? ""}</code>
            </dd>
          </dl>
          <RunOutcome run={run} />
          <h3>Lineage</h3>
          {run.isRerun && run.originalRunId !== null && (
            <p>
              Re-run of{" "}
              <a href={href("runs", run.originalRunId)}>
                <code>{run.originalRunId.slice(0, 8)}</code>
              </a>
              {run.rerunBy !== null && ` by ${run.rerunBy}`}
              {run.rerunReason !== null && `: “${run.rerunReason}”`}
            </p>
          )}
          <AsyncView state={history.state} isEmpty={(h) => h.reruns.length === 0} empty="Never re-run.">
            {(h) => (
              <ul class="picker">
                {h.reruns.map((r) => (
                  <li key={r.id}>
                    <a href={href("runs", r.id)}>
                      <code>{r.id.slice(0, 8)}</code>
                    </a>{" "}
                    <StatusBadge status={r.status} /> {when(r.queuedAt)}
                    {r.rerunReason !== null && ` · “${r.rerunReason}”`}
                  </li>
                ))}
              </ul>
            )}
          </AsyncView>
          <h3>Context</h3>
          <Json value={run.executionContext} />
          <Can perm="execute:functions">
            <div class="run-box">
              <h3>Re-run</h3>
              <JsonInput
                label="overrideParams (shallow-merged over the stored params)"
                rows={3}
                value={overrideParams}
                onChange={setOverrideParams}
              />
              <Field label="Reason">
                <input name="rerun-reason" value={reason} onInput={(e) => setReason(e.currentTarget.value)} />
              </Field>
              <label class="check">
                <input type="checkbox" checked={useLatestCode} onChange={(e) => setUseLatestCode(e.currentTarget.checked)} />
                Use the function's latest code
              </label>
              <Button
                perm="execute:functions"
                kind="primary"
                busy={rerun.busy}
                onClick={() =>
                  void rerun.run(async () => {
                    const queued = await api.post<{ jobId: string }>(`/function-runs/${run.id}/rerun`, {
                      ...(overrideParams === undefined ? {} : { overrideParams }),
                      ...(reason.trim() === "" ? {} : { reason }),
                      useLatestCode
                    })
                    follower.follow(queued.jobId)
                    history.reload()
                  })
                }
              >
                Re-run
              </Button>
              <ErrorBox error={rerun.error} title="Not re-run" />
              <FollowedRun follower={follower} />
            </div>
          </Can>
        </section>
      )}
    </AsyncView>
  )
}
