// @troupe/client-fetch for browsers: bundled by esbuild for the browser platform (no Node polyfills: a `node:`
// import or a Node builtin fails the build), from the sources and from the package as published (its dist, built
// here by the package's own build), and on that path the browser's EventSource is used, not the `eventsource`
// package (the package's `browser` field). The token helpers for browsers are checked against a stand-in token
// endpoint; the client in a real browser is test/browser-app.test.ts.
import * as esbuild from "esbuild"
import { execFile } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { promisify } from "node:util"
import { describe, expect, it } from "vitest"
import { handedToken, passwordGrant, signIn } from "../packages/client-fetch/src/TokenSource.ts"

const root = Path.resolve(import.meta.dirname, "..")
const pkg = Path.join(root, "packages/client-fetch")

/** Bundles `entry` for browsers; fails on anything a browser lacks. */
const bundleForBrowser = async (entry: string) => {
  const result = await esbuild.build({
    entryPoints: [entry],
    bundle: true,
    platform: "browser",
    format: "esm",
    target: "es2022",
    write: false,
    metafile: true,
    logLevel: "silent"
  })
  const inputs = Object.keys(result.metafile.inputs)
  const text = result.outputFiles[0]!.text
  return { inputs, text }
}

const expectBrowserSafe = ({ inputs, text }: { inputs: ReadonlyArray<string>; text: string }) => {
  expect(inputs.filter((i) => i.startsWith("node:") || i.includes("(disabled)"))).toEqual([])
  expect(inputs.some((i) => i.includes("node_modules/eventsource/"))).toBe(false)
  expect(inputs.some((i) => i.includes("node_modules/openapi-fetch/"))).toBe(true)
  expect(text).not.toMatch(/\bfrom\s*["']node:|require\(["']node:/)
}

describe("@troupe/client-fetch in browsers", () => {
  it("bundles from its sources for the browser platform: no node: import, the browser's EventSource", async () => {
    const bundle = await bundleForBrowser(Path.join(pkg, "src/index.ts"))
    expectBrowserSafe(bundle)
    expect(bundle.inputs.some((i) => i.endsWith("FetchEventSource.browser.ts"))).toBe(true)
  })

  it("bundles as published (dist, package.json's exports and browser field)", async () => {
    const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "client-fetch-browser-"))
    try {
      const copy = Path.join(dir, "node_modules/@troupe/client-fetch")
      Fs.mkdirSync(copy, { recursive: true })
      Fs.copyFileSync(Path.join(pkg, "package.json"), Path.join(copy, "package.json"))
      await promisify(execFile)(
        process.execPath,
        [
          Path.join(root, "node_modules/typescript/bin/tsc"),
          "-p",
          Path.join(pkg, "tsconfig.build.json"),
          "--outDir",
          Path.join(copy, "dist")
        ],
        { cwd: root }
      )
      // its dependencies, as an install would place them
      for (const dep of ["openapi-fetch", "openapi-typescript-helpers", "eventsource", "eventsource-parser"]) {
        const from = Path.join(root, "node_modules", dep)
        if (Fs.existsSync(from)) Fs.symlinkSync(from, Path.join(dir, "node_modules", dep))
      }
      const entry = Path.join(dir, "app.js")
      Fs.writeFileSync(entry, 'export * from "@troupe/client-fetch"\n')
      const bundle = await bundleForBrowser(entry)
      expectBrowserSafe(bundle)
      expect(bundle.inputs.some((i) => i.endsWith("dist/FetchEventSource.browser.js"))).toBe(true)
    } finally {
      Fs.rmSync(dir, { recursive: true, force: true })
    }
  })
})

describe("tokens for browsers", () => {
  const issued: Array<URLSearchParams> = []
  const endpoint = async (_input: string | URL | Request, init?: RequestInit) => {
    const params = new URLSearchParams(String(init?.body))
    issued.push(params)
    if (params.get("password") !== "right-password") {
      return new Response(JSON.stringify({ error: "invalid_grant", error_description: "Invalid username or password" }), { status: 400 })
    }
    return new Response(JSON.stringify({ access_token: `t${issued.length}`, token_type: "Bearer", expires_in: 100, scope: "openid" }))
  }

  it("signIn asks once for the workspace's scope; the password grant source renews; a refusal is a TokenError", async () => {
    let now = 1_000
    const options = { baseUrl: "http://troupe.test", workspace: "board", username: "ana", fetch: endpoint, now: () => now }
    expect(await signIn({ ...options, password: "right-password" })).toEqual({ accessToken: "t1", expiresAt: 101_000, scope: "openid" })
    expect(issued[0]!.get("grant_type")).toBe("password")
    expect(issued[0]!.get("scope")).toBe("openid workspace:board")
    await expect(signIn({ ...options, password: "wrong" })).rejects.toMatchObject({
      name: "TokenError",
      status: 400,
      error: "invalid_grant"
    })
    const source = passwordGrant({ ...options, password: "right-password", renewBeforeSeconds: 10 })
    expect(await source.getToken()).toBe("t3")
    now += 89_000
    expect(await source.getToken()).toBe("t3")
    now += 2_000
    expect(await source.getToken()).toBe("t4")
  })

  it("handedToken answers the app's token while valid, then asks the app to sign in again", async () => {
    let now = 0
    let prompts = 0
    const session = handedToken({ now: () => now, onExpired: () => prompts++ })
    await expect(session.getToken()).rejects.toMatchObject({ error: "login_required" })
    expect(prompts).toBe(1)
    session.set({ accessToken: "abc", expiresAt: 500 })
    expect(await session.getToken()).toBe("abc")
    now = 500
    await expect(session.getToken()).rejects.toMatchObject({ error: "login_required" })
    expect(session.current()).toBeUndefined()
    session.set("no-expiry")
    expect(await session.getToken()).toBe("no-expiry")
    session.invalidate() // the server answered 401
    expect(prompts).toBe(3)
    expect(session.current()).toBeUndefined()
  })
})
