// The mixed write load of the chaos run, spread over every node: creates, patches of records created earlier,
// same-key upserts, and patches of a fixed set of keys driven continuously to measure each key's unavailability.
// Every acknowledged write (a 2xx) is remembered with its record id, version and the unique `op` it wrote, so the
// checks can find it again in the record's history, in the outbox and at the webhook receiver.
import { type Client, TransportError } from "./Client.ts"

export interface Ack {
  readonly recordId: string
  readonly version: number
  readonly op: string
  readonly kind: "create" | "patch" | "upsert" | "key"
  readonly at: number
}

/** A stretch of time during which a key's writes failed or hung: from the first attempt after its last ack to the next ack. */
export interface Stretch {
  readonly key: number
  readonly from: number
  readonly to: number
  readonly failures: ReadonlyArray<string>
}

export interface LoadOptions {
  readonly base: string
  readonly structureId: string
  readonly keyIds: ReadonlyArray<string>
  /** pause of each key's writer after an acknowledged write (ms) */
  readonly keyIntervalMs: number
  readonly creators: number
  readonly patchers: number
  readonly upserters: number
  readonly upsertKeys: number
  /** pause of the other writers after each write (ms) */
  readonly pauseMs: number
}

/** A write that got a 5xx or no answer at all: it may or may not have been applied. */
export interface Ambiguous {
  readonly kind: string
  readonly op: string
  readonly what: string
}

export interface Load {
  readonly acks: Array<Ack>
  readonly ambiguous: Array<Ambiguous>
  /** per key: the longest stretch of unavailability seen */
  readonly longest: Array<Stretch | undefined>
  /** every stretch longer than a second */
  readonly stretches: Array<Stretch>
  /** per key: every stretch, ended by an acknowledged write (or by the end of the load) */
  readonly byKey: Array<Array<Stretch>>
  /** non-2xx answers and transport failures of writes, by kind and status or code */
  readonly failures: Map<string, number>
  readonly stop: () => Promise<void>
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

export const startLoad = (client: Client, o: LoadOptions): Load => {
  const acks: Array<Ack> = []
  const created: Array<string> = []
  const longest: Array<Stretch | undefined> = o.keyIds.map(() => undefined)
  const stretches: Array<Stretch> = []
  const byKey: Array<Array<Stretch>> = o.keyIds.map(() => [])
  const failures = new Map<string, number>()
  const ambiguous: Array<Ambiguous> = []
  let stopped = false
  let ops = 0
  const nextOp = () => `op-${++ops}`
  const failed = (kind: string, what: string) => failures.set(`${kind} ${what}`, (failures.get(`${kind} ${what}`) ?? 0) + 1)
  /** A failed write: counted, and remembered when it may have been applied all the same. */
  const failedWrite = (kind: string, op: string, res: Awaited<ReturnType<typeof send>>) => {
    const what = typeof res === "string" ? res : `${res.status} ${res.body?.code ?? ""}`
    failed(kind, what)
    if (typeof res === "string" || res.status >= 500) ambiguous.push({ kind, op, what })
    return what
  }

  /** One write: the answer, or the transport failure's code. */
  const send = async (method: string, path: string, body: unknown, start: number) => {
    try {
      return await client.request(method, path, { body, start })
    } catch (e) {
      return e instanceof TransportError ? e.code : String(e)
    }
  }

  const keyWriter = async (k: number) => {
    const id = o.keyIds[k]!
    let attempt = k
    let since: number | undefined
    let failuresSince: Array<string> = []
    while (!stopped) {
      const started = Date.now()
      since ??= started
      const op = nextOp()
      const res = await send("PATCH", `${o.base}/records/${id}`, { data: { n: attempt, op } }, attempt++)
      if (typeof res !== "string" && res.status === 200) {
        const now = Date.now()
        acks.push({ recordId: id, version: res.body.version, op, kind: "key", at: now })
        const stretch = { key: k, from: since, to: now, failures: failuresSince }
        if (longest[k] === undefined || now - since > longest[k]!.to - longest[k]!.from) longest[k] = stretch
        if (now - since > 1000) stretches.push(stretch)
        byKey[k]!.push(stretch)
        since = undefined
        failuresSince = []
        await sleep(o.keyIntervalMs)
      } else {
        const what = failedWrite("key", op, res)
        failuresSince.push(`${typeof res === "string" ? "" : `${res.node} `}${what}`)
        await sleep(100)
      }
    }
    // still failing when the load stopped: an unavailability that never ended
    if (since !== undefined && failuresSince.length > 0) {
      const stretch = { key: k, from: since, to: Date.now(), failures: [...failuresSince, "(load stopped)"] }
      if (longest[k] === undefined || stretch.to - stretch.from > longest[k]!.to - longest[k]!.from) longest[k] = stretch
      stretches.push(stretch)
      byKey[k]!.push(stretch)
    }
  }

  const loop = async (_kind: string, step: (i: number) => Promise<boolean>) => {
    for (let i = 0; !stopped; i++) {
      const ok = await step(i)
      await sleep(ok ? o.pauseMs : 100)
    }
  }

  const creator = (w: number) =>
    loop("create", async (i) => {
      const op = nextOp()
      const res = await send("POST", `${o.base}/records`, { structureId: o.structureId, data: { key: `c-${w}-${i}`, n: i, op } }, w + i)
      if (typeof res !== "string" && res.status === 201) {
        acks.push({ recordId: res.body.id, version: res.body.version, op, kind: "create", at: Date.now() })
        created.push(res.body.id)
        return true
      }
      failedWrite("create", op, res)
      return false
    })

  const patcher = (w: number) =>
    loop("patch", async (i) => {
      if (created.length === 0) return false
      const id = created[Math.floor(Math.random() * created.length)]!
      const op = nextOp()
      const res = await send("PATCH", `${o.base}/records/${id}`, { data: { n: i, op } }, w + i)
      if (typeof res !== "string" && res.status === 200) {
        acks.push({ recordId: id, version: res.body.version, op, kind: "patch", at: Date.now() })
        return true
      }
      failedWrite("patch", op, res)
      return false
    })

  const upserter = (w: number) =>
    loop("upsert", async (i) => {
      const op = nextOp()
      const match = { key: `u-${(w + i) % o.upsertKeys}` }
      const res = await send("POST", `${o.base}/records/slug/chaos-item/upsert`, { match, data: { n: i, op } }, w + i)
      if (typeof res !== "string" && (res.status === 200 || res.status === 201)) {
        acks.push({ recordId: res.body.data.id, version: res.body.data.version, op, kind: "upsert", at: Date.now() })
        return true
      }
      failedWrite("upsert", op, res)
      return false
    })

  const workers = [
    ...o.keyIds.map((_, k) => keyWriter(k)),
    ...Array.from({ length: o.creators }, (_, w) => creator(w)),
    ...Array.from({ length: o.patchers }, (_, w) => patcher(w)),
    ...Array.from({ length: o.upserters }, (_, w) => upserter(w))
  ]
  return {
    acks,
    ambiguous,
    longest,
    stretches,
    byKey,
    failures,
    stop: async () => {
      stopped = true
      await Promise.all(workers)
    }
  }
}
