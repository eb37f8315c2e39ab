// A run as the console shows it (status, result, error, logs, timings), and following a queued job through
// GET /function-runs?jobId= until it settles.
import { useEffect, useRef, useState } from "preact/hooks"
import { type FunctionRun, finished } from "../lib/Types.ts"
import { useSession } from "../Session.tsx"
import { ErrorBox, href, Json, Loading, StatusBadge, when } from "../Ui.tsx"

/** Follows one job: `follow(jobId)` polls it (quickly at first) until it is completed, failed or timed out. */
export const useFollowRun = () => {
  const { api } = useSession()
  const [run, setRun] = useState<FunctionRun | undefined>(undefined)
  const [jobId, setJobId] = useState<string | undefined>(undefined)
  const [error, setError] = useState<unknown>(undefined)
  const generation = useRef(0)
  useEffect(() => () => void (generation.current += 1), [])
  const follow = (id: string) => {
    const mine = ++generation.current
    setJobId(id)
    setRun(undefined)
    setError(undefined)
    const poll = async (delay: number) => {
      if (generation.current !== mine) return
      try {
        const current = await api.get<FunctionRun>("/function-runs", { jobId: id })
        if (generation.current !== mine) return
        setRun(current)
        if (finished(current.status)) return
      } catch (e) {
        if (generation.current !== mine) return
        setError(e)
        return
      }
      setTimeout(() => void poll(Math.min(1000, delay * 1.5)), delay)
    }
    void poll(150)
  }
  return { run, jobId, error, follow }
}

export const Logs = ({ run }: { run: FunctionRun }) =>
  run.logs.length === 0 ? (
    <p class="muted">No logs.</p>
  ) : (
    <ol class="logs" data-testid="run-logs">
      {run.logs.map((l, i) => (
        <li key={i} class={`log-${l.level}`}>
          <span class="log-at">{new Date(l.at).toLocaleTimeString()}</span>
          <span class="log-level">{l.level}</span>
          <span class="log-message">{l.message}</span>
        </li>
      ))}
    </ol>
  )

/** One run's outcome. */
export const RunOutcome = ({ run }: { run: FunctionRun }) => (
  <div class="run" data-testid="run-outcome" data-status={run.status}>
    <p>
      <StatusBadge status={run.status} /> <a href={href("runs", run.id)}>run {run.id.slice(0, 8)}</a>
      {run.durationMs !== null && ` · ${Math.round(run.durationMs)} ms`}
      {run.memoryUsageBytes !== null && ` · ${(run.memoryUsageBytes / 1048576).toFixed(1)} MiB`}
      {run.functionVersion !== null && ` · code ${run.functionVersion === "test" ? "under test" : `v${run.functionVersion}`}`}
      {` · ${run.executionSource} · queued ${when(run.queuedAt)}`}
    </p>
    {run.error !== null && <pre class="run-error">{run.error}</pre>}
    {finished(run.status) && run.error === null && (
      <>
        <h4>Result</h4>
        <Json value={run.result} />
      </>
    )}
    <h4>Logs</h4>
    <Logs run={run} />
  </div>
)

/** The followed job: waiting, its outcome, or why it could not be read. */
export const FollowedRun = ({ follower }: { follower: ReturnType<typeof useFollowRun> }) => {
  if (follower.jobId === undefined) return null
  return (
    <div class="followed">
      <ErrorBox error={follower.error} />
      {follower.run === undefined ? (
        <Loading label={`Job ${follower.jobId.slice(0, 8)} queued…`} />
      ) : (
        <>
          {!finished(follower.run.status) && <Loading label={`${follower.run.status}…`} />}
          <RunOutcome run={follower.run} />
        </>
      )}
    </div>
  )
}
