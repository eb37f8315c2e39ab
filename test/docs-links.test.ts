// Every relative link of the documentation resolves (README.md, CONTRIBUTING.md, docs/*.md): the file or folder it
// names exists, and a `#anchor` (in the same file or in another Markdown file) names one of its headings, spelled
// as GitHub spells them. No server needed.
import * as Fs from "node:fs"
import * as Path from "node:path"
import { describe, expect, it } from "vitest"

const root = Path.resolve(import.meta.dirname, "..")
const docs = Path.join(root, "docs")
const files = [
  Path.join(root, "README.md"),
  Path.join(root, "CONTRIBUTING.md"),
  ...Fs.readdirSync(docs)
    .filter((name) => name.endsWith(".md"))
    .map((name) => Path.join(docs, name))
]

/** The text outside fenced code blocks and inline code spans, where links are not links. */
const prose = (text: string) =>
  text
    .split(/^(?:```|~~~).*$/m)
    .filter((_, i) => i % 2 === 0)
    .join("\n")
    .replace(/`[^`\n]*`/g, "")

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens, repeats numbered. */
const anchorsOf = (text: string): Set<string> => {
  const seen = new Map<string, number>()
  const anchors = new Set<string>()
  const headings = text
    .split(/^(?:```|~~~).*$/m)
    .filter((_, i) => i % 2 === 0)
    .flatMap((part) => [...part.matchAll(/^#{1,6}[ \t]+(.+?)[ \t#]*$/gm)].map((m) => m[1]!))
  for (const heading of headings) {
    const base = heading
      .replace(/\[([^\]]*)\]\([^)]*\)/g, "$1")
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\p{M} _-]/gu, "")
      .replace(/ /g, "-")
    const n = seen.get(base) ?? 0
    seen.set(base, n + 1)
    anchors.add(n === 0 ? base : `${base}-${n}`)
  }
  return anchors
}

/** Every `[text](target)` and `![alt](target)` of a Markdown file, with the target's title dropped. */
const linksOf = (text: string) => [...prose(text).matchAll(/!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((m) => m[1]!)

const problemsOf = (file: string): Array<string> => {
  const text = Fs.readFileSync(file, "utf8")
  const problems: Array<string> = []
  for (const link of linksOf(text)) {
    if (/^[a-z][a-z0-9+.-]*:/i.test(link)) continue // http:, https:, mailto:
    const [pathPart, anchor] = link.split("#", 2) as [string, string | undefined]
    const target = pathPart === "" ? file : Path.resolve(Path.dirname(file), decodeURI(pathPart))
    if (!Fs.existsSync(target)) {
      problems.push(`${link}: no such file`)
      continue
    }
    if (anchor !== undefined && anchor !== "" && target.endsWith(".md")) {
      if (!anchorsOf(Fs.readFileSync(target, "utf8")).has(decodeURIComponent(anchor).toLowerCase())) {
        problems.push(`${link}: no heading with the anchor #${anchor} in ${Path.relative(root, target)}`)
      }
    }
  }
  return problems
}

describe("documentation links", () => {
  it("anchors are spelled as GitHub spells them", () => {
    const anchors = anchorsOf("# A title\n## Upsert and `Idempotency-Key`\n### 1. Runs (`BENCH_ONLY=x`)\n## A title\n")
    expect([...anchors]).toEqual(["a-title", "upsert-and-idempotency-key", "1-runs-bench_onlyx", "a-title-1"])
  })

  it("the README stays short", () => {
    expect(Fs.readFileSync(Path.join(root, "README.md"), "utf8").split("\n").length).toBeLessThanOrEqual(300)
  })

  for (const file of files) {
    it(`every relative link and anchor of ${Path.relative(root, file)} resolves`, () => {
      expect(problemsOf(file)).toEqual([])
    })
  }
})
