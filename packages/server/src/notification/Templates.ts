// Liquid templates (liquidjs) of the notification service. Two engines share the rules: strict variables (a
// variable the caller did not give is a 400 naming it, `variables.user.name`), strict filters, own properties only,
// no file system (includes look in an empty in-memory map) and parse/render/memory limits so a template cannot
// stall a node. The `html` part renders with every output HTML-escaped (`{{ x | raw }}` opts out); subject and text
// render as written. A message with HTML and no text gets a plain-text part converted from its HTML.
import type { BadRequest } from "@troupe/api/Errors"
import { Effect } from "effect"
import { convert } from "html-to-text"
import { Liquid, type Template } from "liquidjs"
import { invalid } from "./Problems.ts"

/** The parts of a message a template (or a send) gives. */
export interface Parts {
  readonly subject: string | null
  readonly text: string | null
  readonly html: string | null
}

/** A template parsed once: its parts and the top-level variables they read. */
export interface Compiled {
  readonly subject: ReadonlyArray<Template> | null
  readonly text: ReadonlyArray<Template> | null
  readonly html: ReadonlyArray<Template> | null
  readonly variables: ReadonlyArray<string>
}

const limits = { parseLimit: 1_000_000, renderLimit: 2_000, memoryLimit: 32 * 1024 * 1024 }
const common = { strictVariables: true, strictFilters: true, ownPropertyOnly: true, templates: {}, ...limits }
const plain = new Liquid(common)
const escaping = new Liquid({ ...common, outputEscape: "escape" })

const firstLine = (e: unknown) => (e instanceof Error ? e.message : String(e)).split("\n")[0]!

const fields = ["subject", "text", "html"] as const

/** Parses each part; a syntax error is a 400 naming the part. */
export const compile = (parts: Parts): Effect.Effect<Compiled, BadRequest> =>
  Effect.gen(function* () {
    const out: Record<string, ReadonlyArray<Template> | null> = {}
    const variables = new Set<string>()
    for (const field of fields) {
      const source = parts[field]
      if (source === null) {
        out[field] = null
        continue
      }
      const engine = field === "html" ? escaping : plain
      try {
        const parsed = engine.parse(source)
        out[field] = parsed
        for (const v of engine.globalVariablesSync(parsed)) variables.add(v)
      } catch (e) {
        return yield* invalid(field, `template syntax error: ${firstLine(e)}`)
      }
    }
    return { subject: out.subject!, text: out.text!, html: out.html!, variables: [...variables].sort() }
  })

/** `undefined variable: user.name, line:1, col:10` → `user.name`. */
const missingVariable = (message: string) => /undefined variable: ([^,\s]+)/.exec(message)?.[1]

/** Renders every part with `variables`; a missing variable or a failing render is a 400 naming it. */
export const render = (compiled: Compiled, variables: Readonly<Record<string, unknown>>): Effect.Effect<Parts, BadRequest> =>
  Effect.gen(function* () {
    const out: Record<string, string | null> = {}
    for (const field of fields) {
      const parsed = compiled[field]
      if (parsed === null) {
        out[field] = null
        continue
      }
      try {
        out[field] = String((field === "html" ? escaping : plain).renderSync(parsed as Array<Template>, variables))
      } catch (e) {
        const message = firstLine(e)
        const name = missingVariable(message)
        if (name !== undefined)
          return yield* invalid(`variables.${name}`, `the template's ${field} uses "${name}", which variables do not give`)
        return yield* invalid(field, `the template's ${field} failed to render: ${message}`)
      }
    }
    return { subject: out.subject!, text: out.text!, html: out.html! }
  })

/** The plain-text part of an HTML-only message. */
export const textFromHtml = (html: string): string => convert(html, { wordwrap: 78, selectors: [{ selector: "img", format: "skip" }] })

/** The parts as sent: a text part always (converted from the HTML when only HTML is given). */
export const withText = (parts: Parts): Parts =>
  parts.text === null && parts.html !== null ? { ...parts, text: textFromHtml(parts.html) } : parts
