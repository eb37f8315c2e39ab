// The fuzzer's protocol garbage: requests no HTTP client would send (truncated bodies, bad framing, raw bytes) sent
// through a bare socket, and the answer read back whatever its shape.
import fc from "fast-check"
import * as Net from "node:net"
import { type Rng, toJsonText } from "./FuzzContract.ts"
import type { Fixtures, PrincipalName } from "./FuzzFixtures.ts"
import type { FuzzRequest, Outcome, Slot } from "./FuzzTypes.ts"

// ------------------------------------------------------------------------------------------------ protocol garbage

export const protocolGarbage = (
  slot: Slot,
  rng: Rng,
  principal: PrincipalName,
  target: string,
  headers: Record<string, string>,
  fixtures: Fixtures
): FuzzRequest => {
  const auth = headers.authorization !== undefined ? `Authorization: ${headers.authorization}\r\n` : ""
  const method = slot.op.method
  const body = toJsonText({ structureId: fixtures.structure.id, data: { title: "truncated" } })
  const cases = [
    // a body announced longer than what arrives, then the client's half of the connection closes
    [
      "truncatedBody",
      `${method} ${target} HTTP/1.1\r\nHost: x\r\n${auth}Content-Type: application/json\r\nContent-Length: ${body.length + 40}\r\n\r\n${body}`,
      true,
      true
    ],
    // a chunked body cut off mid-chunk
    [
      "truncatedChunk",
      `${method} ${target} HTTP/1.1\r\nHost: x\r\n${auth}Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n40\r\n{"a":`,
      true,
      true
    ],
    [
      "badChunk",
      `${method} ${target} HTTP/1.1\r\nHost: x\r\n${auth}Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n`,
      false,
      false
    ],
    [
      "lengthAndChunked",
      `${method} ${target} HTTP/1.1\r\nHost: x\r\n${auth}Content-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n`,
      false,
      false
    ],
    ["badRequestLine", `${method} ${target} HTTP/9.9 junk\r\n\r\n`, false, false],
    ["badHeader", `${method} ${target} HTTP/1.1\r\nHost: x\r\nNo colon here\r\n\r\n`, false, false],
    ["longUrl", `GET ${target}?q=${"x".repeat(20_000)} HTTP/1.1\r\nHost: x\r\n${auth}\r\n`, false, false],
    [
      "manyHeaders",
      `GET ${target} HTTP/1.1\r\nHost: x\r\n${auth}${Array.from({ length: 300 }, (_, i) => `X-H${i}: ${"v".repeat(100)}\r\n`).join("")}\r\n`,
      false,
      false
    ],
    ["http10", `${method} ${target} HTTP/1.0\r\n${auth}\r\n`, false, false],
    ["noHost", `${method} ${target} HTTP/1.1\r\n${auth}\r\n`, false, false],
    // a request followed by bytes that start no request (a body the first one does not declare): the parser error
    // closes the connection, perhaps before the first request is answered
    [
      "trailingGarbage",
      `${method} ${target} HTTP/1.1\r\nHost: x\r\n${auth}\r\n${rng.pick(['"s"', "[]", "{}", "\u0000\u0001"])}`,
      false,
      true
    ],
    ["binary", `${Buffer.from(rng.fc(fcBytes)).toString("latin1")}\r\n\r\n`, false, true]
  ] as const
  const [kind, text, halfClose, mayGoUnanswered] = rng.pick(cases)
  return {
    index: slot.index,
    op: slot.op.id,
    cls: "garbage",
    principal,
    variant: `protocol:${kind}`,
    method,
    target,
    headers,
    raw: { text, halfClose },
    mayGoUnanswered
  }
}

const fcBytes = fc.uint8Array({ minLength: 1, maxLength: 200 })

/** Sends raw bytes and reads whatever comes back until the server closes or goes quiet. */
export const sendRaw = (base: URL, raw: { readonly text: string; readonly halfClose: boolean }, timeoutMs: number): Promise<Outcome> =>
  new Promise((resolve) => {
    const start = performance.now()
    const socket = Net.connect(Number(base.port), base.hostname)
    let data = Buffer.alloc(0)
    let settled = false
    const finish = (error?: string) => {
      if (settled) return
      settled = true
      socket.destroy()
      const answer = parseResponse(data.toString("utf8"))
      const ms = Math.round(performance.now() - start)
      resolve({ ...answer, ...(error !== undefined && data.length === 0 ? { error } : {}), ms })
    }
    // an answer is complete when its declared length has arrived (keep-alive sockets stay open)
    const complete = () => {
      const text = data.toString("latin1")
      const end = text.indexOf("\r\n\r\n")
      if (end < 0) return false
      const length = /\r\ncontent-length:\s*(\d+)/i.exec(text.slice(0, end))
      return length !== null && data.length >= end + 4 + Number(length[1])
    }
    socket.setTimeout(Math.min(timeoutMs, 5000), () => finish("no answer (socket idle)"))
    socket.on("data", (chunk: Buffer) => {
      data = Buffer.concat([data, chunk])
      if (complete()) finish()
    })
    socket.on("end", () => finish("closed without an answer"))
    socket.on("close", () => finish("closed without an answer"))
    socket.on("error", (e) => finish(e.message))
    socket.write(Buffer.from(raw.text, "latin1"))
    if (raw.halfClose) socket.end()
  })

const parseResponse = (text: string): Omit<Outcome, "ms"> => {
  const end = text.indexOf("\r\n\r\n")
  const status = /^HTTP\/1\.[01] (\d{3})/.exec(text)
  if (status === null || end < 0) return { status: undefined, headers: {}, text }
  const headers: Record<string, string> = {}
  for (const line of text.slice(0, end).split("\r\n").slice(1)) {
    const at = line.indexOf(":")
    if (at > 0) headers[line.slice(0, at).trim().toLowerCase()] = line.slice(at + 1).trim()
  }
  let body = text.slice(end + 4)
  if (/chunked/i.test(headers["transfer-encoding"] ?? "")) {
    let decoded = ""
    for (let at = 0; at < body.length; ) {
      const line = body.indexOf("\r\n", at)
      const size = parseInt(body.slice(at, line < 0 ? undefined : line), 16)
      if (line < 0 || !(size > 0)) break
      decoded += body.slice(line + 2, line + 2 + size)
      at = line + 2 + size + 2
    }
    body = decoded
  }
  return { status: Number(status[1]), headers, text: body }
}
