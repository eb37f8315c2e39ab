// Real mail peers for notification tests, on 127.0.0.1: an SMTP server (smtp-server) that parses every message it
// is given (mailparser) and answers each DATA as the test says (250, a 4xx or 5xx reply, after a delay), with
// STARTTLS when given a certificate and AUTH when given credentials; an SMS provider (node:http) in Twilio's form;
// and a server that accepts connections and never says a word.
import { type ParsedMail, simpleParser } from "mailparser"
import * as Http from "node:http"
import * as Net from "node:net"
import { SMTPServer, type SMTPServerSession } from "smtp-server"
import { sleep } from "./wait.ts"

export interface Mail {
  readonly parsed: ParsedMail
  readonly messageId: string
  readonly envelopeFrom: string
  readonly envelopeTo: ReadonlyArray<string>
  /** TLS was on (STARTTLS or implicit) when the message was given */
  readonly secure: boolean
  /** the AUTH user, if any */
  readonly user: string | undefined
  /** the SMTP reply code given to this DATA */
  readonly code: number
}

export interface MailServer {
  readonly port: number
  /** `smtp://[user:pass@]127.0.0.1:port` */
  readonly url: string
  /** every DATA, accepted or refused, in order */
  readonly attempts: Array<Mail>
  /** connection errors (a client reset mid-transaction), kept rather than thrown */
  readonly connectionErrors: ReadonlyArray<Error>
  /** the accepted messages */
  readonly accepted: () => ReadonlyArray<Mail>
  /** the reply to a DATA (250 accepts) and how long to wait before giving it */
  answer: (mail: Omit<Mail, "code">, n: number) => number
  delayMs: number
  readonly waitFor: (predicate: (attempts: ReadonlyArray<Mail>) => boolean, timeoutMs?: number, what?: string) => Promise<void>
  readonly close: () => Promise<void>
}

const replies: Record<number, string> = {
  451: "4.3.0 Temporary local problem, try again later",
  550: "5.1.1 <nobody@example.com>: Recipient address rejected: User unknown",
  552: "5.3.4 Message size exceeds fixed limit"
}

export const startMailServer = async (
  options: {
    readonly tls?: { readonly key: string; readonly cert: string }
    readonly auth?: { readonly user: string; readonly pass: string }
  } = {}
): Promise<MailServer> => {
  const attempts: Array<Mail> = []
  const state = { answer: (() => 250) as MailServer["answer"], delayMs: 0 }
  const server = new SMTPServer({
    secure: false,
    logger: false,
    size: 10 * 1024 * 1024,
    ...(options.tls === undefined ? { disabledCommands: ["STARTTLS"] } : { key: options.tls.key, cert: options.tls.cert }),
    authOptional: options.auth === undefined,
    onAuth: (auth, _session, callback) =>
      auth.username === options.auth?.user && auth.password === options.auth?.pass
        ? callback(null, { user: auth.username })
        : callback(Object.assign(new Error("5.7.8 Authentication credentials invalid"), { responseCode: 535 })),
    onData: (stream, session: SMTPServerSession, callback) => {
      simpleParser(stream).then(
        async (parsed) => {
          const mail = {
            parsed,
            messageId: parsed.messageId ?? "",
            envelopeFrom: session.envelope.mailFrom === false ? "" : session.envelope.mailFrom.address,
            envelopeTo: session.envelope.rcptTo.map((r) => r.address),
            secure: session.secure,
            user: typeof session.user === "string" ? session.user : undefined
          }
          const code = state.answer(mail, attempts.length + 1)
          if (state.delayMs > 0) await sleep(state.delayMs)
          attempts.push({ ...mail, code })
          if (code === 250) return callback(null, `Ok: queued as Q${attempts.length}`)
          callback(Object.assign(new Error(replies[code] ?? "refused"), { responseCode: code }))
        },
        (e) => callback(e)
      )
    }
  })
  // A client killed mid-transaction (the restart tests SIGKILL the node while it sends) resets its connection:
  // smtp-server emits that as an 'error' on the server, which would be an uncaught exception without a listener.
  const connectionErrors: Array<Error> = []
  server.on("error", (e) => connectionErrors.push(e))
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()))
  const port = ((server as unknown as { server: Net.Server }).server.address() as Net.AddressInfo).port
  const credentials = options.auth === undefined ? "" : `${encodeURIComponent(options.auth.user)}:${encodeURIComponent(options.auth.pass)}@`
  return Object.assign(state, {
    port,
    url: `smtp://${credentials}127.0.0.1:${port}`,
    attempts,
    connectionErrors,
    accepted: () => attempts.filter((a) => a.code === 250),
    waitFor: async (predicate: (a: ReadonlyArray<Mail>) => boolean, timeoutMs = 30_000, what = "mail") => {
      const deadline = Date.now() + timeoutMs
      while (!predicate(attempts)) {
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; got ${attempts.length} attempts`)
        await sleep(25)
      }
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve()))
  })
}

/** A TCP server that accepts and never answers (an SMTP server that hangs before its greeting). */
export const startSilentServer = async () => {
  const sockets = new Set<Net.Socket>()
  const server = Net.createServer((socket) => {
    sockets.add(socket)
    socket.on("close", () => sockets.delete(socket))
    socket.on("error", () => {})
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()))
  return {
    url: `smtp://127.0.0.1:${(server.address() as Net.AddressInfo).port}`,
    connections: () => sockets.size,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy()
        server.close(() => resolve())
      })
  }
}

export interface SmsHit {
  readonly authorization: string | undefined
  readonly contentType: string | undefined
  readonly form: Record<string, string>
}

/** An SMS provider in Twilio's form: records each POST, answers `status` (and a JSON body) as the test says. */
export const startSmsProvider = async () => {
  const hits: Array<SmsHit> = []
  const state = { status: (_hit: SmsHit, _n: number): number => 201 }
  const server = Http.createServer((req, res) => {
    let body = ""
    req.setEncoding("utf8")
    req.on("data", (c) => (body += c))
    req.on("end", () => {
      const hit = {
        authorization: req.headers.authorization,
        contentType: req.headers["content-type"],
        form: Object.fromEntries(new URLSearchParams(body))
      }
      hits.push(hit)
      const status = state.status(hit, hits.length)
      const answer =
        status < 300
          ? { sid: `SM${hits.length.toString().padStart(32, "0")}`, status: "queued" }
          : status === 400
            ? { code: 21211, message: "The 'To' number +15005550001 is not a valid phone number.", status: 400 }
            : { message: "Internal error", status }
      res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(answer))
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()))
  const url = `http://127.0.0.1:${(server.address() as Net.AddressInfo).port}/2010-04-01/Accounts/AC123/Messages.json`
  return Object.assign(state, {
    url,
    hits,
    close: () => new Promise<void>((resolve) => server.close(() => resolve()))
  })
}
