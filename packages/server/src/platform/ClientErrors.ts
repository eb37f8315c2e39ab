// Requests Node refuses before any of our code sees them get the contract's error body too: what its HTTP parser
// cannot read (a malformed request line, header or chunk, a URL or header block over the size limit, a body cut off
// mid-chunk), an Expect header other than 100-continue, an HTTP/1.1 request without a Host header. Left to itself Node
// answers them with an empty body; these listeners answer with the same status (a parser error only while no response
// has started on the socket, then the socket closes) with the contract's error body (README.md, "Errors"), written by
// the edge's writer (EdgeWriter).
import * as Crypto from "node:crypto"
import type * as Http from "node:http"
import type * as Net from "node:net"
import { contractBody, writeFailure } from "./EdgeWriter.ts"

/** Status, reason phrase, contract code, message. */
type Answer = readonly [number, string, string, string]

/** Node's parser error codes that are not a plain 400. */
const parserAnswers: Record<string, Answer> = {
  HPE_HEADER_OVERFLOW: [431, "Request Header Fields Too Large", "HEADERS_TOO_LARGE", "Request header fields too large"],
  HPE_CHUNK_EXTENSIONS_OVERFLOW: [413, "Payload Too Large", "PAYLOAD_TOO_LARGE", "Request chunk extensions too large"],
  ERR_HTTP_REQUEST_TIMEOUT: [408, "Request Timeout", "REQUEST_TIMEOUT", "Request timeout"]
}
const malformed: Answer = [400, "Bad Request", "BAD_REQUEST", "Malformed HTTP request"]
const expectationFailed: Answer = [417, "Expectation Failed", "EXPECTATION_FAILED", "Only Expect: 100-continue is supported"]
const hostMissing: Answer = [400, "Bad Request", "BAD_REQUEST", "An HTTP/1.1 request needs a Host header"]

const failureOf = ([status, reason, code, message]: Answer, headers?: Record<string, string>) => ({
  status,
  reason,
  code,
  message,
  headers
})

/** The raw HTTP/1.1 response to a parser error (by Node's error code): the contract body, connection closed. */
export const clientErrorResponse = (code: string | undefined): string => {
  const answer = parserAnswers[code ?? ""] ?? malformed
  const requestId = Crypto.randomUUID()
  const text = JSON.stringify(contractBody(failureOf(answer), requestId))
  return [
    `HTTP/1.1 ${answer[0]} ${answer[1]}`,
    "Content-Type: application/json",
    `Content-Length: ${Buffer.byteLength(text)}`,
    `X-Request-Id: ${requestId}`,
    "Connection: close",
    "",
    text
  ].join("\r\n")
}

const respond = (response: Http.ServerResponse, answer: Answer, headers?: Record<string, string>) =>
  writeFailure(response, failureOf(answer, headers), Crypto.randomUUID())

/** Installs the listeners on a server; returns the server. */
export const answerClientErrors = <S extends Http.Server>(server: S): S => {
  server.on("clientError", (error: NodeJS.ErrnoException, socket: Net.Socket) => {
    // as Node's own handler: write only while no response has started on this socket, then close it
    const inFlight = (socket as Net.Socket & { _httpMessage?: { _headerSent?: boolean } })._httpMessage
    if (error.code !== "ECONNRESET" && socket.writable && inFlight?._headerSent !== true) {
      socket.write(clientErrorResponse(error.code))
    }
    socket.destroy()
  })
  server.on("checkExpectation", (_: Http.IncomingMessage, response: Http.ServerResponse) => {
    respond(response, expectationFailed)
  })
  // RFC 9112 (HTTP/1.1 message syntax): an HTTP/1.1 request without Host is a 400; Node's own check answers it before any listener
  ;(server as unknown as { requireHostHeader: boolean }).requireHostHeader = false
  const emit = server.emit.bind(server)
  server.emit = ((event: string, ...args: Array<any>) => {
    const request = args[0] as Http.IncomingMessage
    if (event === "request" && request.httpVersion === "1.1" && request.headers.host === undefined) {
      respond(args[1], hostMissing, { connection: "close" })
      return true
    }
    return emit(event, ...args)
  }) as S["emit"]
  return server
}
