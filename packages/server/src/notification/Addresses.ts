// Recipient checks of the notification service (docs/notifications.md "Limits"): email addresses by RFC 5321's
// lengths (local part ≤ 64 octets, the address ≤ 254), one `@`, a dot-atom local part (RFC 6531 UTF-8 allowed) and a
// domain with a dot whose labels are valid once converted to ASCII (IDN: `exämple.com` is `xn--exmple-cua.com`);
// phone numbers in E.164. Each check returns the problem in words, or undefined.
import * as Url from "node:url"

const MAX_ADDRESS = 254
const MAX_LOCAL = 64
const MAX_DOMAIN = 253

// atext of RFC 5322 plus any non-ASCII character (RFC 6531), in dot-separated atoms
const atom = /^[A-Za-z0-9!#$%&'*+/=?^_`{|}~\u0080-\uFFFF-]+$/u
const label = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/

const octets = (s: string) => Buffer.byteLength(s, "utf8")

/** The domain in ASCII (punycode for IDN), or a problem. */
const asciiDomain = (domain: string): { readonly ok: true; readonly ascii: string } | { readonly ok: false; readonly problem: string } => {
  if (domain.length === 0) return { ok: false, problem: "has no domain after @" }
  const ascii = Url.domainToASCII(domain)
  if (ascii === "" || ascii.endsWith(".")) return { ok: false, problem: `has an invalid domain "${domain}"` }
  if (ascii.length > MAX_DOMAIN) return { ok: false, problem: `has a domain longer than ${MAX_DOMAIN} characters` }
  const labels = ascii.split(".")
  if (labels.length < 2) return { ok: false, problem: `has a domain without a dot ("${domain}")` }
  if (labels.some((l) => !label.test(l))) return { ok: false, problem: `has an invalid domain "${domain}"` }
  if (/^\d+$/.test(labels[labels.length - 1]!)) return { ok: false, problem: `has a numeric top-level domain ("${domain}")` }
  return { ok: true, ascii }
}

/** Why `address` is not an acceptable email address, or undefined. */
export const emailProblem = (address: string): string | undefined => {
  if (address.length === 0) return "must not be empty"
  if (/[\s<>()[\]\\,;:"]/.test(address) || /\p{Cc}/u.test(address)) return "must be a bare address (name@example.com)"
  if (octets(address) > MAX_ADDRESS) return `must be at most ${MAX_ADDRESS} characters (RFC 5321)`
  const at = address.indexOf("@")
  if (at < 0) return "must contain @"
  if (address.indexOf("@", at + 1) >= 0) return "must contain exactly one @"
  const local = address.slice(0, at)
  if (local.length === 0) return "has nothing before @"
  if (octets(local) > MAX_LOCAL) return `has a local part longer than ${MAX_LOCAL} characters (RFC 5321)`
  if (local.split(".").some((a) => !atom.test(a))) return "has an invalid local part (dots only between characters)"
  const domain = asciiDomain(address.slice(at + 1))
  return domain.ok ? undefined : domain.problem
}

/** A sender: a bare address or `Name <address>`. */
export interface Mailbox {
  readonly name: string | undefined
  readonly address: string
}

/** Parses `name@example.com` or `Display Name <name@example.com>`; a problem in words when it is neither. */
export const parseMailbox = (
  raw: string
): { readonly ok: true; readonly mailbox: Mailbox } | { readonly ok: false; readonly problem: string } => {
  const text = raw.trim()
  const named = /^(.*?)\s*<([^<>]+)>$/.exec(text)
  const address = named === null ? text : named[2]!.trim()
  const name = named === null ? undefined : named[1]!.replace(/^"(.*)"$/, "$1").trim()
  if (name !== undefined && (/[\r\n]/.test(name) || name.length > 200)) return { ok: false, problem: "has an invalid display name" }
  const problem = emailProblem(address)
  if (problem !== undefined) return { ok: false, problem }
  return { ok: true, mailbox: { name: name === "" ? undefined : name, address } }
}

/** The mailbox as a header value. */
export const formatMailbox = (m: Mailbox): string =>
  m.name === undefined ? m.address : `"${m.name.replace(/["\\]/g, "\\$&")}" <${m.address}>`

const e164 = /^\+[1-9]\d{1,14}$/

/** Why `number` is not an E.164 phone number, or undefined. */
export const phoneProblem = (number: string): string | undefined =>
  e164.test(number) ? undefined : "must be an E.164 number: + then country code and number, at most 15 digits (e.g. +14155550100)"
