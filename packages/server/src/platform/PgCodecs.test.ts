// The tsvector codec: a binary tsvector as PostgreSQL sends it decodes to its text form, labels A-C kept.
import { Result } from "effect"
import { describe, expect, it } from "vitest"
import { decodeTsvector } from "./PgCodecs.ts"

/** A binary tsvector: count, then per lexeme its bytes, NUL, npos and the position words (weight in the top 2 bits). */
const binary = (lexemes: ReadonlyArray<readonly [string, ReadonlyArray<readonly [number, number]>]>) => {
  const parts: Array<number> = [0, 0, 0, lexemes.length]
  for (const [word, positions] of lexemes) {
    parts.push(...new TextEncoder().encode(word), 0, positions.length >> 8, positions.length & 0xff)
    for (const [pos, weight] of positions) {
      const w = (weight << 14) | pos
      parts.push(w >> 8, w & 0xff)
    }
  }
  return Uint8Array.from(parts)
}

describe("decodeTsvector", () => {
  it("prints what PostgreSQL prints, whatever the weights (A and B are not UTF-8 in binary)", () => {
    const decoded = decodeTsvector(
      binary([
        ["alpha", [[1, 3]]],
        [
          "beta",
          [
            [2, 2],
            [7, 0]
          ]
        ],
        ["o'brien", [[3, 1]]],
        ["none", []]
      ])
    )
    expect(Result.getOrThrow(decoded)).toBe("'alpha':1A 'beta':2B,7 'o''brien':3C 'none'")
  })

  it("fails, rather than inventing text, on truncated input", () => {
    expect(Result.isFailure(decodeTsvector(Uint8Array.from([0, 0, 0, 2, 97, 0, 0, 1])))).toBe(true)
    expect(Result.isFailure(decodeTsvector(Uint8Array.from([0, 0])))).toBe(true)
  })
})
