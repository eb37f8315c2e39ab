// Waiting in tests: a plain delay and two bounded polling loops. Every test file and support module takes these
// from here rather than defining its own.

/** Resolves after `ms` milliseconds. */
export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))

/** Polls the synchronous condition `ok` every `intervalMs` until it holds; throws when `timeoutMs` runs out. */
export const until = async (ok: () => boolean, timeoutMs = 15_000, intervalMs = 25): Promise<void> => {
  const deadline = Date.now() + timeoutMs
  while (!ok()) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`)
    await sleep(intervalMs)
  }
}

/** Polls `probe` every `intervalMs` until it answers a value (not `undefined`); throws when `timeoutMs` runs out. */
export const eventually = async <A>(probe: () => Promise<A | undefined>, timeoutMs = 30_000, intervalMs = 250): Promise<A> => {
  const deadline = Date.now() + timeoutMs
  while (true) {
    const value = await probe()
    if (value !== undefined) return value
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`)
    await sleep(intervalMs)
  }
}
