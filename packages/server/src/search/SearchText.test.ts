// The text side of search without a database: words, typo budgets, the edit distance, tsquery text and highlights.
import { describe, expect, it } from "vitest"
import { editDistance, highlightHtml, MAX_WORDS, prefixDistance, quoteLexeme, tsqueryText, typoBudget, wordsOf } from "./SearchText.ts"

describe("wordsOf", () => {
  it("keeps letters, digits and marks of any script; everything else separates", () => {
    expect(wordsOf(`"Hello" & wörld | !x:* (a) <-> 'b'`)).toEqual(["hello", "wörld", "x", "a", "b"])
    expect(wordsOf("東京 タワー مرحبا שלום")).toEqual(["東京", "タワー", "مرحبا", "שלום"])
    expect(wordsOf("🦄🔥 \u0000 &|!:*()")).toEqual([])
    expect(wordsOf("a ".repeat(50))).toHaveLength(MAX_WORDS)
  })
})

describe("typos", () => {
  it("allows one typo from 5 letters and two from 9", () => {
    expect([typoBudget("data"), typoBudget("datab"), typoBudget("databases"), typoBudget("ééééé")]).toEqual([0, 1, 2, 1])
    expect([typoBudget("10045"), typoBudget("order2026x"), typoBudget("sku٣٤٥٦٧")]).toEqual([0, 0, 0])
  })

  it("counts an adjacent transposition as one edit and stops past the budget", () => {
    expect(editDistance("basil", "bsail", 1)).toBe(1)
    expect(editDistance("database", "datbase", 1)).toBe(1)
    expect(editDistance("postgresql", "postgrsqll", 2)).toBe(2)
    expect(editDistance("database", "zebra", 1)).toBe(2)
  })

  it("measures a typed prefix against the closest start of a word", () => {
    expect(prefixDistance("database", "datbas", 1)).toBe(1)
    expect(prefixDistance("postgresql", "pstgre", 1)).toBe(1)
    expect(prefixDistance("database", "datab", 1)).toBe(0)
    expect(prefixDistance("database", "dxxbas", 1)).toBe(2)
  })
})

describe("tsquery text", () => {
  it("quotes every lexeme, so nothing of the user's text is query syntax", () => {
    expect(quoteLexeme("o'reilly\\")).toBe("'o''reilly\\\\'")
    const terms = [
      { lexeme: "databas", typos: ["datbas"], prefix: false },
      { lexeme: "guid", typos: [], prefix: true }
    ]
    expect(tsqueryText(terms)).toBe("('databas' | 'datbas') & 'guid':*")
    expect(tsqueryText(terms, "AB")).toBe("('databas':AB | 'datbas':AB) & 'guid':*AB")
  })
})

describe("highlights", () => {
  it("escapes the text and marks only the matches", () => {
    expect(highlightHtml("Fish & <b>\u0001chips\u0002</b>")).toBe("Fish &amp; &lt;b&gt;<mark>chips</mark>&lt;/b&gt;")
    expect(highlightHtml("no match here")).toBeUndefined()
  })
})
