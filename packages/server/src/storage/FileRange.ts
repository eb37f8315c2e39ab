// A byte range of a disk store's file (DiskStore.open), as a Node Readable for whoever reads it as a stream (the
// Effect stack's raw response), and as a `SelfSending` source (platform/EdgeWriter.ts) that the fast lane lets write
// itself into the response: read into buffers taken from a small pool and given back once the socket has sent them.
// A download through a Readable allocates a fresh buffer per chunk, all of it external memory, and V8 answers each
// 64 MB of it with a full mark-compact of the node's whole heap: at 10 MB per download that collector work cost the
// node more than sending the bytes (docs/benchmarks.md, "Embedded uploads and downloads without the collector's full
// marks"). Buffers of a pool (BufferPool.ts) allocate nothing per download once the pool has filled.
import * as Fs from "node:fs"
import { Readable } from "node:stream"
import { makePool } from "./BufferPool.ts"

/** Bytes per read (and per buffer of the pool): one trip through libuv's pool each. */
export const CHUNK_BYTES = 512 * 1024

/** Buffers kept for reuse: two per download in flight, for 16 at once (16 MiB). */
const { take, give } = makePool(CHUNK_BYTES, 32)

/** What a response looks like to a source that writes itself into one (an http.ServerResponse). */
export interface Sink {
  readonly writableNeedDrain: boolean
  readonly destroyed: boolean
  write(chunk: Uint8Array, callback: (error?: Error | null) => void): boolean
  end(): unknown
  destroy(error?: Error): unknown
  once(event: "drain" | "close", listener: () => void): unknown
}

/** Bytes `start` to `end` (inclusive) of the file at `path`. The file is opened on the first read (or send). */
export class FileRange extends Readable {
  readonly #path: string
  #position: number
  #left: number
  #fd: number | undefined

  constructor(path: string, start: number, end: number) {
    super({ highWaterMark: CHUNK_BYTES })
    this.#path = path
    this.#position = start
    this.#left = end - start + 1
  }

  override _read(): void {
    const read = (fd: number) => {
      if (this.#left <= 0) return void this.push(null)
      const buffer = Buffer.allocUnsafeSlow(Math.min(CHUNK_BYTES, this.#left))
      Fs.read(fd, buffer, 0, buffer.length, this.#position, (error, got) => {
        if (error !== null || got === 0) return void this.destroy(error ?? new Error(`${this.#path}: the file ended early`))
        this.#position += got
        this.#left -= got
        this.push(got === buffer.length ? buffer : buffer.subarray(0, got))
      })
    }
    if (this.#fd !== undefined) return read(this.#fd)
    Fs.open(this.#path, "r", (error, fd) => {
      if (error !== null) return void this.destroy(error)
      if (this.destroyed) return Fs.close(fd, () => {})
      this.#fd = fd
      read(fd)
    })
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    const fd = this.#fd
    this.#fd = undefined
    if (fd === undefined) return callback(error)
    Fs.close(fd, () => callback(error))
  }

  /**
   * Writes the range into `out`, then ends it; a failed read destroys `out` (its status is gone already), and `out`
   * closing early (the client went away) stops the reads. The next chunk is read while the last one is sent; a
   * buffer goes back to the pool when its write completes. Not to be mixed with reading the stream.
   */
  sendTo(out: Sink): void {
    let fd: number | undefined
    let reading = false
    let stopped = false
    const release = () => {
      if (fd !== undefined && !reading) {
        Fs.close(fd, () => {})
        fd = undefined
      }
    }
    const fail = (error: Error) => {
      stopped = true
      release()
      out.destroy(error)
    }
    const next = () => {
      if (stopped || fd === undefined) return release()
      if (this.#left <= 0) {
        stopped = true
        release()
        out.end()
        return
      }
      const buffer = take()
      reading = true
      Fs.read(fd, buffer, 0, Math.min(buffer.length, this.#left), this.#position, (error, got) => {
        reading = false
        if (stopped || out.destroyed) {
          give(buffer)
          stopped = true
          return release()
        }
        if (error !== null || got === 0) {
          give(buffer)
          return fail(error ?? new Error(`${this.#path}: the file ended early`))
        }
        this.#position += got
        this.#left -= got
        const send = () => {
          if (out.destroyed) {
            give(buffer)
            return release()
          }
          // the buffer is the pool's again once the socket has taken its bytes (a write to a destroyed response
          // never calls back: that buffer is left to the collector)
          out.write(got === buffer.length ? buffer : buffer.subarray(0, got), () => give(buffer))
          next()
        }
        if (out.writableNeedDrain) out.once("drain", send)
        else send()
      })
    }
    out.once("close", () => {
      stopped = true
      release()
    })
    Fs.open(this.#path, "r", (error, opened) => {
      if (error !== null) return fail(error)
      fd = opened
      next()
    })
  }
}
