// Buffers of one size, reused: the disk store's reads of downloads (FileRange.ts) and its write batches of uploads
// (DiskStore.ts). Every fresh Buffer is external memory to V8, which it answers with full collections of the heap
// once enough has been allocated (docs/benchmarks.md, "Embedded uploads and downloads without the collector's full
// marks"); a buffer taken from here costs nothing once the pool has filled. Allocated outside Node's small-buffer
// slab, so a buffer given back holds nothing else alive.

export interface BufferPool {
  readonly bytes: number
  /** a buffer of `bytes` bytes, its content undefined */
  readonly take: () => Buffer
  /** gives a buffer back once nothing reads or writes it any more (kept when the pool has room) */
  readonly give: (buffer: Buffer) => void
}

/** A pool of `bytes`-byte buffers, keeping at most `keep` of them. */
export const makePool = (bytes: number, keep: number): BufferPool => {
  const free: Array<Buffer> = []
  return {
    bytes,
    take: () => free.pop() ?? Buffer.allocUnsafeSlow(bytes),
    give: (buffer) => {
      if (free.length < keep && buffer.length === bytes) free.push(buffer)
    }
  }
}
