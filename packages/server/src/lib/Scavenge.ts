// Young-generation collections asked for by the bytes of request bodies that flow through the node (uploads:
// BlobStore.metered). Node copies every chunk of a request body into an ArrayBuffer of its own, dead as soon as the
// chunk is stored, and only a collection frees it. Under load V8 grows this node's young generation to 64 MB
// semi-spaces, so its scavenges come seldom, and the body bytes reach V8's limit on external memory first: V8 then
// marks and compacts the whole heap (~80 MB), once every ~50 uploads of 1 MB, which cost an upload more CPU than
// storing it (docs/benchmarks.md, "Embedded uploads and downloads without the collector's full marks"). A scavenge
// every SCAVENGE_BYTES of body frees those buffers for a fraction of that.
//
// The `gc` function is V8's (`--expose-gc`): the flag is set only while one new context is made, at startup, and
// cleared at once, so no other context (a function's sandbox included) gets it. A scavenge is what V8 runs on its
// own when the young generation fills: it changes when, not what, is collected.
import * as V8 from "node:v8"
import * as Vm from "node:vm"

type Gc = (options: { readonly type: "minor" }) => void

const gc: Gc | undefined = (() => {
  try {
    V8.setFlagsFromString("--expose-gc")
    const found = Vm.runInNewContext("typeof gc === 'function' ? gc : undefined") as Gc | undefined
    V8.setFlagsFromString("--no-expose-gc")
    return found
  } catch {
    return undefined
  }
})()

/** Body bytes between two scavenges. */
export const SCAVENGE_BYTES = 8 * 1024 * 1024

let since = 0

/** Counts `bytes` of a request body just stored; past SCAVENGE_BYTES since the last one, runs a scavenge. */
export const bodyBytesStored = (bytes: number): void => {
  since += bytes
  if (since < SCAVENGE_BYTES) return
  since = 0
  gc?.({ type: "minor" })
}
