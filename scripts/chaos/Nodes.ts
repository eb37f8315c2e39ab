// Three Troupe nodes on one fresh PostgreSQL database, each on fixed ports so that a restarted node comes back at
// the address it had (as a StatefulSet pod does), and what their logs say about the cluster singletons.
import { freePort, startServer, type TestNode, type TestServer } from "../../test/support/TestServer.ts"
import { makeSlot, type NodeSlot } from "./Client.ts"

export const RELAY_RUNNING = "events: outbox relay and webhook dispatcher running on this node"
export const RELAY_STOPPED = "events: outbox relay and webhook dispatcher stopped on this node"
export const SCHEDULER_RUNNING = "scheduler: running on this node"
export const SCHEDULER_STOPPED = "scheduler: stopped on this node"

export interface Member {
  readonly name: string
  readonly port: number
  readonly runnerPort: number
  readonly slot: NodeSlot
  /** every process this member ran, oldest first */
  readonly lives: Array<TestNode>
  readonly node: () => TestNode
}

export interface LogLine {
  readonly member: string
  readonly life: number
  readonly at: number
  readonly level: string
  readonly message: string
  readonly raw: string
}

/** The JSON log lines of one process (consoleJson: one object per line, with an ISO timestamp). */
export const logLines = (member: string, life: number, node: TestNode): Array<LogLine> =>
  node
    .output()
    .split("\n")
    .flatMap((raw) => {
      if (!raw.startsWith("{")) return []
      try {
        const j = JSON.parse(raw)
        const message = Array.isArray(j.message) ? j.message.join(" ") : String(j.message)
        return [{ member, life, at: Date.parse(j.timestamp), level: String(j.level ?? j.logLevel ?? ""), message, raw }]
      } catch {
        return []
      }
    })

export interface Nodes {
  readonly server: TestServer
  readonly members: Array<Member>
  readonly env: Record<string, string>
  /** the member whose live process last logged `running` for the singleton (and not `stopped` since) */
  readonly holder: (running: string, stopped: string) => Member | undefined
  readonly restart: (member: Member) => Promise<void>
  readonly lines: () => Array<LogLine>
  readonly close: () => Promise<void>
}

const alive = (node: TestNode) => node.process.exitCode === null && node.process.signalCode === null

export const startNodes = async (extraEnv: Record<string, string>): Promise<Nodes> => {
  const ports = await Promise.all([0, 1, 2].map(async () => ({ port: await freePort(), runnerPort: await freePort() })))
  const env: Record<string, string> = {
    TROUPE_PUBLIC_URL: "http://troupe.chaos",
    TROUPE_LOG_LEVEL: "info",
    // three nodes of ~30 connections each fit PostgreSQL's default 100
    TROUPE_QUERY_POOL_SIZE: "4",
    TROUPE_LIMIT_READS: "0",
    TROUPE_LIMIT_WRITES: "0",
    TROUPE_LIMIT_BULK: "0",
    TROUPE_LIMIT_FUNCTIONS: "0",
    TROUPE_LIMIT_QUERIES: "0",
    ...extraEnv
  }
  const portsOf = (i: number) => ({ PORT: String(ports[i]!.port), TROUPE_RUNNER_PORT: String(ports[i]!.runnerPort) })
  const server = await startServer({ clustered: true, env: { ...env, ...portsOf(0) } })
  const members: Array<Member> = []
  const member = (i: number, first: TestNode): Member => {
    const lives = [first]
    return {
      name: `n${i + 1}`,
      port: ports[i]!.port,
      runnerPort: ports[i]!.runnerPort,
      slot: makeSlot(`n${i + 1}`, `http://127.0.0.1:${ports[i]!.port}`),
      lives,
      node: () => lives[lives.length - 1]!
    }
  }
  members.push(member(0, server))
  for (const i of [1, 2]) members.push(member(i, await server.startPeer({ ...env, ...portsOf(i) })))
  const lines = () => members.flatMap((m) => m.lives.flatMap((node, life) => logLines(m.name, life, node)))
  return {
    server,
    members,
    env,
    holder: (running, stopped) => {
      const holding = members.filter((m) => {
        const node = m.node()
        if (!alive(node)) return false
        const out = node.output()
        return out.lastIndexOf(running) > out.lastIndexOf(stopped)
      })
      return holding.length === 1 ? holding[0] : undefined
    },
    restart: async (m) => {
      const i = members.indexOf(m)
      m.lives.push(await server.startPeer({ ...env, ...portsOf(i) }))
    },
    lines,
    close: () => server.close()
  }
}
