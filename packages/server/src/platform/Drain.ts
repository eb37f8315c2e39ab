// The HTTP listener's drain on SIGTERM. `server.close()` stops accepting connections but waits for the open ones,
// and a keep-alive client (a load balancer's pool, an HTTP agent) that keeps sending requests keeps its connection
// open forever: the node then serves on until its shutdown timeout and is killed, its shards handed over only when
// their locks expire. So from `close()` on, every response not yet started asks its client to close the connection
// (`Connection: close`) and idle connections are closed at once: each connection finishes the request it carries
// and ends, its client's next request goes to another node, and the node goes on to hand its shards over.
// Connections are tracked, not requests, so the hot path pays one flag test per request.
import type * as Http from "node:http"
import type * as Net from "node:net"

/** The response a connection is serving (Node's own field; undefined while the connection is idle). */
const responseOf = (socket: Net.Socket) => (socket as unknown as { _httpMessage?: Http.ServerResponse | null })._httpMessage ?? undefined

/** `Base`, draining on `close()` as above. */
export const draining = (Base: typeof Http.Server): typeof Http.Server =>
  class DrainingServer extends Base {
    #closing = false
    readonly #sockets = new Set<Net.Socket>()

    override emit(event: string, ...args: Array<any>): boolean {
      if (event === "request") {
        if (this.#closing) (args[1] as Http.ServerResponse).setHeader("connection", "close")
      } else if (event === "connection") {
        const socket = args[0] as Net.Socket
        this.#sockets.add(socket)
        socket.once("close", () => this.#sockets.delete(socket))
      }
      return super.emit(event, ...args)
    }

    override close(callback?: (err?: Error) => void): this {
      if (!this.#closing) {
        this.#closing = true
        for (const socket of this.#sockets) {
          const res = responseOf(socket)
          if (res === undefined) continue
          // the request in flight ends its connection; a response already started (a stream) is left to its route
          if (!res.headersSent) res.setHeader("connection", "close")
          else res.once("finish", () => this.closeIdleConnections())
        }
      }
      super.close(callback)
      this.closeIdleConnections()
      return this
    }
  }
