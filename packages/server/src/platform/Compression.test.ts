import { describe, expect, it } from "vitest"
import * as Zlib from "node:zlib"
import { compressFast, matchesEtag, pickEncoding, staticDocument } from "./Compression.ts"

describe("compression", () => {
  it("picks brotli, then gzip, honouring q=0", () => {
    expect(pickEncoding(undefined)).toBeUndefined()
    expect(pickEncoding("identity")).toBeUndefined()
    expect(pickEncoding("gzip, deflate, br")).toBe("br")
    expect(pickEncoding("gzip, deflate")).toBe("gzip")
    expect(pickEncoding("br;q=0, gzip;q=0.5")).toBe("gzip")
    expect(pickEncoding("gzip;q=0")).toBeUndefined()
    expect(pickEncoding("*")).toBe("br")
  })

  it("round-trips both encodings", () => {
    const bytes = new TextEncoder().encode(JSON.stringify(Array.from({ length: 200 }, (_, i) => ({ i, text: "hello" }))))
    expect(Zlib.brotliDecompressSync(compressFast(bytes, "br"))).toEqual(Buffer.from(bytes))
    expect(Zlib.gunzipSync(compressFast(bytes, "gzip"))).toEqual(Buffer.from(bytes))
    const doc = staticDocument(bytes)
    expect(Zlib.brotliDecompressSync(doc.br)).toEqual(Buffer.from(bytes))
    expect(Zlib.gunzipSync(doc.gzip)).toEqual(Buffer.from(bytes))
  })

  it("matches an ETag in If-None-Match lists and weak forms", () => {
    expect(matchesEtag('"a", W/"b"', '"b"')).toBe(true)
    expect(matchesEtag("*", '"b"')).toBe(true)
    expect(matchesEtag('"a"', '"b"')).toBe(false)
    expect(matchesEtag(undefined, '"b"')).toBe(false)
  })
})
