// Email over SMTP with nodemailer: `smtp://` (STARTTLS whenever the server offers it; `?requireTLS=true` insists)
// or `smtps://` (TLS from the first byte), credentials in the URL, connections pooled per provider. Every step
// (connect, greeting, each command) gives up after TROUPE_NOTIFY_TIMEOUT_SECONDS. A workspace's own server is held
// to the webhook rule in production: its host is resolved first and a private or loopback address refused, and the
// socket goes to the address that was checked (no second lookup to rebind).
// The socket is ours either way (nodemailer's `getSocket`) so that its writes are coalesced: nodemailer writes a
// message as its envelope, then each chunk of the MIME stream and the final dot, one send() each; corked until the
// event loop turns, the chunks written meanwhile leave as one writev (strace of a pooled loop and its sink: 9 write
// system calls per message became 6, the server's replies included). See docs/benchmarks.md, fourth session.
import { Effect, Result } from "effect"
import * as Dns from "node:dns"
import * as Net from "node:net"
import { createTransport } from "nodemailer"
import type { SMTPTransportGetSocket } from "nodemailer/lib/smtp-transport"
import { isPrivateAddress } from "../events/UrlPolicy.ts"
import { type Delivered, type MailTransport, type Outgoing, SendFailure, smtpFailure } from "./MailTransport.ts"

/** What nodemailer needs of an SMTP URL. */
export interface SmtpOptions {
  readonly host: string
  readonly port: number
  readonly secure: boolean
  readonly requireTLS: boolean
  readonly auth: { readonly user: string; readonly pass: string } | undefined
}

/** Parses `smtp[s]://[user[:password]@]host[:port][?requireTLS=true]`; a problem in words when it is not one. */
export const parseSmtpUrl = (raw: string): Result.Result<SmtpOptions, string> => {
  if (!URL.canParse(raw)) return Result.fail("smtpUrl must be a URL such as smtp://user:password@smtp.example.com:587")
  const url = new URL(raw)
  if (url.protocol !== "smtp:" && url.protocol !== "smtps:") return Result.fail("smtpUrl must start with smtp:// or smtps://")
  if (url.hostname === "") return Result.fail("smtpUrl must name a host")
  const secure = url.protocol === "smtps:"
  const decode = (s: string) => {
    try {
      return decodeURIComponent(s)
    } catch {
      return s
    }
  }
  return Result.succeed({
    host: url.hostname.replace(/^\[(.*)\]$/, "$1"),
    port: url.port === "" ? (secure ? 465 : 587) : Number(url.port),
    secure,
    requireTLS: url.searchParams.get("requireTLS") === "true",
    auth: url.username === "" ? undefined : { user: decode(url.username), pass: decode(url.password) }
  })
}

/** An SMTP reply's queue id (`250 2.0.0 Ok: queued as 4C3F2`), or the reply itself. */
const queueId = (response: unknown): string | null => {
  if (typeof response !== "string" || response.length === 0) return null
  const id = /queued as ([^\s]+)/i.exec(response)?.[1] ?? /\bid=([^\s]+)/i.exec(response)?.[1]
  return (id ?? response).slice(0, 300)
}

/** Holds a socket's writes until the event loop turns, then sends them together (one writev). */
const coalescingWrites = (socket: Net.Socket): Net.Socket => {
  const write = socket.write
  let corked = false
  const flush = () => {
    corked = false
    socket.uncork()
  }
  socket.write = function (this: Net.Socket, ...args: Parameters<Net.Socket["write"]>) {
    if (!corked) {
      corked = true
      socket.cork()
      setImmediate(flush)
    }
    return write.apply(this, args)
  } as Net.Socket["write"]
  return socket
}

/** Connects to `address` (the host or a checked address of it) and hands nodemailer the socket, writes coalesced. */
const connect = (host: string, address: string, port: number, timeoutMs: number, callback: Parameters<SMTPTransportGetSocket>[1]) => {
  const socket = Net.connect({ host: address, port, timeout: timeoutMs })
  const fail = (e: Error) => callback(Object.assign(e, { code: "ECONNECTION" }))
  socket.once("error", fail)
  socket.once("timeout", () => {
    socket.destroy()
    fail(new Error(`connection to ${host} timed out`))
  })
  socket.once("connect", () => {
    socket.off("error", fail)
    socket.setTimeout(0)
    callback(null, { connection: coalescingWrites(socket) })
  })
}

/** Connects to the server as configured (the node's own, or a workspace's outside production). */
const plainSocket =
  (timeoutMs: number): SMTPTransportGetSocket =>
  (options, callback) => {
    const host = options.host ?? "localhost"
    connect(host, host, Number(options.port ?? 587), timeoutMs, callback)
  }

/** Connects to a checked public address of `host` (production guard of workspace-configured servers). */
const guardedSocket =
  (timeoutMs: number): SMTPTransportGetSocket =>
  (options, callback) => {
    const host = options.host ?? ""
    Dns.lookup(host, { all: true }, (err, addresses) => {
      if (err) return callback(Object.assign(err, { code: "EDNS" }))
      const refused = addresses.find((a) => isPrivateAddress(a.address))
      if (refused !== undefined || addresses.length === 0) {
        return callback(
          Object.assign(new Error(`${host} resolves to a private address (${refused?.address ?? "none"}), refused in production`), {
            code: "EPRIVATE"
          })
        )
      }
      connect(host, addresses[0]!.address, Number(options.port ?? 587), timeoutMs, callback)
    })
  }

export interface SmtpTransportConfig {
  readonly options: SmtpOptions
  readonly timeoutMs: number
  /** connections kept open to this server */
  readonly maxConnections: number
  /** refuse private addresses (a workspace's server, in production) */
  readonly guarded: boolean
}

/** A pooled SMTP transport for one server. */
export const makeSmtpTransport = (config: SmtpTransportConfig): MailTransport => {
  const { options } = config
  const transporter = createTransport({
    pool: true,
    maxConnections: config.maxConnections,
    maxMessages: 1000,
    host: options.host,
    port: options.port,
    secure: options.secure,
    requireTLS: options.requireTLS,
    ...(options.auth === undefined ? {} : { auth: { user: options.auth.user, pass: options.auth.pass } }),
    connectionTimeout: config.timeoutMs,
    greetingTimeout: config.timeoutMs,
    socketTimeout: config.timeoutMs,
    dnsTimeout: config.timeoutMs,
    getSocket: (config.guarded ? guardedSocket : plainSocket)(config.timeoutMs)
  })

  const send = (message: Outgoing): Effect.Effect<Delivered, SendFailure> => {
    if (message.channel !== "email") {
      return Effect.fail(new SendFailure({ temporary: false, reason: "the SMTP transport sends email only" }))
    }
    return Effect.tryPromise({
      try: () =>
        transporter.sendMail({
          from: message.from,
          to: [...message.to],
          cc: [...message.cc],
          bcc: [...message.bcc],
          subject: message.subject,
          messageId: message.messageId,
          ...(message.text === null ? {} : { text: message.text }),
          ...(message.html === null ? {} : { html: message.html })
        }),
      catch: smtpFailure
    }).pipe(
      Effect.map((info) => {
        const rejected = (info.rejected ?? []).map(String)
        return {
          providerMessageId: queueId(info.response),
          warning: rejected.length > 0 ? `refused by the server: ${rejected.join(", ")}` : null
        }
      })
    )
  }

  return { send, close: Effect.sync(() => transporter.close()) }
}
