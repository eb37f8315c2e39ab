// The console's screens of the sibling services in a real Chromium (test/support/ConsolePage.ts): the global search
// (ranked hits with their highlights, the text around the marks escaped, a prefix found as typed) and Data health
// (a schema scan from the button, a suggestion accepted into the structure; a correction found by "Check records"
// and accepted as a record update; a structure made after the screen opened reaching its picker) and Files (an upload into a folder through the file input with its progress, a
// text preview, a delete confirmed in the browser's dialog) and Browser apps (two origins saved as the server stores
// them, a bad one refused with the server's 400 shown; a viewer has no such screen). The data is made over the API; what the screens do is
// checked over the API too.
import * as Crypto from "node:crypto"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import type { Browser, ElementHandle, Page } from "puppeteer-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { computeClient } from "./support/compute.ts"
import { go, launchChromium, rowsOnce, signIn, snap, viewport, waitText, writeControls } from "./support/ConsolePage.ts"
import { startServer, type TestServer } from "./support/TestServer.ts"
import { eventually } from "./support/wait.ts"

// The callbacks given to the page run in Chromium; the node's type-check has no DOM library.
declare const document: { readonly body: { readonly innerText: string } }
/** An `<input type=file>` as puppeteer's uploadFile sees it (no DOM library here). */
interface HTMLInputElementLike {
  readonly files: unknown
}

/** The first row `[data-testid=<testId>]` whose text holds every one of `texts`, waiting for it. */
const rowWith = async (page: Page, testId: string, texts: ReadonlyArray<string>, timeout: number) => {
  let seen: Array<string> = []
  try {
    return await eventually(async () => {
      seen = []
      for (const row of await page.$$(`[data-testid=${testId}]`)) {
        const text = await row.evaluate((r) => r.textContent ?? "")
        seen.push(text)
        if (texts.every((t) => text.includes(t))) return row
      }
      return undefined
    }, timeout)
  } catch (cause) {
    const shown = await page.evaluate(() => document.body.innerText).catch(() => "(page gone)")
    throw new Error(`no ${testId} row with ${texts.join(", ")}; rows: ${JSON.stringify(seen)}; the page shows:\n${shown.slice(0, 1500)}`, {
      cause
    })
  }
}

/**
 * Clicks a Data health job button until the screen says the job started ("Scan started"): a click while the panel
 * re-renders (its lists loading) can land on a node that is being replaced.
 */
const startJob = async (page: Page, label: string) => {
  await page.waitForSelector(`button::-p-text(${label})`)
  // an earlier job's toast is gone first, so the one waited for is this click's
  await page.waitForFunction(() => !document.body.innerText.includes("Scan started"), { timeout: 15_000 })
  for (let attempt = 0; attempt < 3; attempt++) {
    await page.click(`button::-p-text(${label})`)
    const started = await page
      .waitForFunction(() => document.body.innerText.includes("Scan started"), { timeout: 10_000 })
      .then(() => true)
      .catch(() => false)
    if (started) return
  }
  throw new Error(`${label}: the screen never said the job started`)
}

describe("the services' console screens in Chromium", () => {
  let server: TestServer
  let browser: Browser
  let page: Page
  let api: ReturnType<typeof computeClient>
  let token = ""
  const pageErrors: Array<string> = []

  const created = async (method: string, path: string, body?: unknown) => {
    const res = await api.call(method, path, body)
    expect(res.status, `${method} ${path}: ${res.text}`).toBeLessThan(300)
    return res.body
  }

  beforeAll(async () => {
    const [started, launched] = await Promise.all([startServer(), launchChromium()])
    server = started
    browser = launched
    token = await server.adminToken()
    api = computeClient(server, token)
    page = await browser.newPage()
    await page.setViewport(viewport)
    page.on("pageerror", (e) => pageErrors.push(e instanceof Error ? e.message : String(e)))
    await signIn(page, server.baseUrl, "admin", server.adminPassword)
  }, 120_000)

  afterAll(async () => {
    await browser?.close()
    await server?.close()
  })

  it("searches every structure: hits ranked with escaped highlights, a prefix as typed", async () => {
    await created("POST", "/structures", {
      name: "Articles",
      recordSlug: "articles",
      properties: [
        { name: "title", type: "string" },
        { name: "body", type: "string" }
      ],
      searchFields: [
        { name: "title", weight: 4 },
        { name: "body", weight: 1 }
      ]
    })
    const guide = await created("POST", "/records", {
      structureId: "articles",
      data: { title: "Database indexing guide", body: "How a GIN index works" }
    })
    await created("POST", "/records", {
      structureId: "articles",
      data: { title: "Cooking pasta", body: "Tips & <b>tricks</b>: 2 < 3, a database of recipes" }
    })
    await created("POST", "/records", { structureId: "articles", data: { title: "Gardening", body: "Basil in summer" } })

    await go(page, `#/search?q=${encodeURIComponent("databa")}`)
    await waitText(page, "2 matches")
    expect(await rowsOnce(page, "table", 2)).toBe(2)
    // the title match first; its link opens the record
    const first = await page.$eval("table tbody tr a", (a) => a.getAttribute("href") ?? "")
    expect(first).toContain(guide.id)
    // the marks are the server's only markup: the record's "&" and "<" are text (ts_headline leaves out its tags)
    expect(await page.$$eval("table tbody mark", (marks) => marks.length)).toBeGreaterThanOrEqual(2)
    expect(await page.$$eval("table tbody b", (bs) => bs.length)).toBe(0)
    await waitText(page, "Tips & tricks")
    await waitText(page, "2 < 3, a database of recipes")
    await snap(page, "search")

    // the search box of the screen: a new query replaces the results
    await page.click("input[type=search]", { count: 3 })
    await page.keyboard.press("Backspace")
    await page.type("input[type=search]", "basil summer")
    await page.keyboard.press("Enter")
    await waitText(page, "1 match")
    expect(await page.evaluate(() => (globalThis as unknown as { location: { hash: string } }).location.hash)).toContain("q=basil%20summer")
    expect(pageErrors).toEqual([])
  }, 120_000)

  it("Data health: scans from the button, accepts a schema suggestion and a correction", async () => {
    // slugs of this attempt (a retry runs against the same node)
    const tag = Date.now().toString(36)
    const signupsSlug = `signups-${tag}`
    const customersSlug = `customers-${tag}`
    const signups = await created("POST", "/structures", {
      name: `Signups ${tag}`,
      recordSlug: signupsSlug,
      properties: [{ name: "name", type: "string" }],
      schemaDiscoveryMode: "auto-evolving"
    })
    await created("POST", "/records/bulk", {
      structureId: signupsSlug,
      records: Array.from({ length: 40 }, (_, i) => ({ data: { name: `user ${i}`, age: 20 + i } }))
    })
    await go(page, `#/data-health/${signupsSlug}/schema`)
    await startJob(page, "Scan stored records")
    const row = await rowWith(page, "schema-suggestion", ["add_property", "age"], 120_000)
    await snap(page, "data-health")
    await (await row.$("button::-p-text(Accept)"))!.click()
    await rowWith(page, "schema-suggestion", ["age", "accepted"], 30_000)
    const structure = await created("GET", `/structures/${signups.id}`)
    expect(structure.properties.map((p: { name: string }) => p.name)).toEqual(["name", "age"])

    // corrections: a misspelling among frequent values, found by "Check records", accepted as a record update
    await created("POST", "/structures", {
      name: `Customers ${tag}`,
      recordSlug: customersSlug,
      properties: [{ name: "country", type: "string" }]
    })
    const countries = ["Germany", "France", "Spain", "Italy"]
    const bulk = await created("POST", "/records/bulk", {
      structureId: customersSlug,
      records: Array.from({ length: 200 }, (_, i) => ({ data: { country: i === 7 ? "Germny" : countries[i % 4] } }))
    })
    const misspelt = (bulk.records as Array<{ id: string }>)[7]!.id
    await created("PUT", `/collections/${customersSlug}/ai-config`, { enabled: true, fields: ["country"] })
    await go(page, `#/data-health/${customersSlug}/validation`)
    await startJob(page, "Check records")
    const correction = await rowWith(page, "validation-suggestion", ["Germny", "Germany"], 120_000)
    await (await correction.$("button::-p-text(Accept)"))!.click()
    const fixed = await eventually(async () => {
      const record = await created("GET", `/records/${misspelt}`)
      return record.data.country === "Germany" ? record : undefined
    }, 30_000)
    expect(fixed.version).toBe(2)
    expect(pageErrors).toEqual([])
  }, 300_000)

  it("Data health: a structure made after the screen opened joins the picker when it is focused", async () => {
    const slug = `late-${Date.now().toString(36)}`
    const picker = "select[aria-label=Structure]"
    await go(page, "#/data-health")
    await page.waitForSelector(picker)
    // the picker's list was loaded before the structure existed
    await created("POST", "/structures", { name: `Late ${slug}`, recordSlug: slug, properties: [{ name: "x", type: "string" }] })
    expect(await page.$(`${picker} option[value="${slug}"]`)).toBeNull()
    await page.focus(picker)
    await page.waitForSelector(`${picker} option[value="${slug}"]`, { timeout: 30_000 })
    await page.select(picker, slug)
    await eventually(async () => (page.url().endsWith(`#/data-health/${slug}/schema`) ? true : undefined), 15_000)
    expect(pageErrors).toEqual([])
  }, 120_000)

  it("Files: uploads into a folder, previews the text, deletes after the confirmation", async () => {
    const storage = `/storage/workspace/${server.workspace}/api/v1`
    const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "troupe-console-files-"))
    const text = `shelf inventory\n${"row,".repeat(2000)}\n`
    const file = Path.join(dir, "inventory.txt")
    Fs.writeFileSync(file, text)
    try {
      await go(page, "#/files")
      await page.waitForSelector("input[aria-label='Upload folder']")
      await page.type("input[aria-label='Upload folder']", "reports/2026")
      const input = (await page.$("input[type=file]")) as ElementHandle<HTMLInputElementLike>
      await input.uploadFile(file)
      await waitText(page, "done")
      // the list row's link (the upload's progress line names the file too, before the list has it)
      await page.waitForSelector("a::-p-text(inventory.txt)")
      const listed = await server.request("GET", `${storage}/files?folder=reports/2026`, { token })
      expect(listed.status, listed.text).toBe(200)
      expect(listed.body.data).toHaveLength(1)
      const stored = listed.body.data[0]
      expect(stored).toMatchObject({ name: "inventory.txt", folder: "reports/2026", size: Buffer.byteLength(text) })
      expect(stored.checksum).toBe(`sha256:${Crypto.createHash("sha256").update(text).digest("hex")}`)
      await snap(page, "files")

      // the preview shows the text as stored
      await page.click("a::-p-text(inventory.txt)")
      await waitText(page, "shelf inventory")
      await page.keyboard.press("Escape")

      // delete: the browser asks first; the file is gone afterwards
      page.once("dialog", (dialog) => void dialog.accept())
      await page.click("button::-p-text(Delete)")
      await eventually(async () => {
        const after = await server.request("GET", `${storage}/files/${stored.id}/metadata`, { token })
        return after.status === 404 ? true : undefined
      }, 30_000)
      await waitText(page, "No files here yet.")
      expect(pageErrors).toEqual([])
    } finally {
      Fs.rmSync(dir, { recursive: true, force: true })
    }
  }, 120_000)

  it("Browser apps (CORS): saves two origins as the server stores them; a bad origin shows the server's 400", async () => {
    await go(page, "#/cors")
    await waitText(page, "Allowed origins")
    await page.waitForSelector("textarea[name=allowed-origins]")
    expect(await page.$$eval("[data-write]", (els) => els.map((e) => e.getAttribute("data-write")))).toEqual(["write:cors"])
    await page.type("textarea[name=allowed-origins]", "HTTPS://App.Example.com:443\nhttp://localhost:5173\n")
    await page.click("button::-p-text(Save origins)")
    const saved = await eventually(async () => {
      const res = await api.call("GET", "/settings/cors")
      return res.body.allowedOrigins.length === 2 ? res.body : undefined
    }, 15_000)
    expect(saved).toEqual({ allowedOrigins: ["https://app.example.com", "http://localhost:5173"] })
    // the form shows the list as stored (canonical)
    await page.waitForFunction(
      () =>
        (globalThis as unknown as { document: { querySelector: (s: string) => { value: string } } }).document.querySelector(
          "textarea[name=allowed-origins]"
        ).value === "https://app.example.com\nhttp://localhost:5173"
    )

    // a bad origin: the server's 400 (its message and the detail naming the entry) shown; the list unchanged
    const refused = await api.call("PUT", "/settings/cors", { allowedOrigins: ["https://app.example.com", "https://x.example.com/path"] })
    expect(refused.status).toBe(400)
    const detail = (refused.body.details as Array<{ field: string; message: string }>)[0]!
    await page.type("textarea[name=allowed-origins]", "\nhttps://x.example.com/path")
    await page.click("button::-p-text(Save origins)")
    await waitText(page, refused.body.message)
    await waitText(page, detail.message)
    expect(await page.$eval("[role=alert]", (e) => e.textContent ?? "")).toContain("allowedOrigins[2]")
    expect((await api.call("GET", "/settings/cors")).body).toEqual(saved)
    await snap(page, "cors")
    expect(pageErrors).toEqual([])

    // a viewer (no read:cors) has no such screen: not in the navigation, and #/cors shows another screen
    await created("POST", "/members", { username: "cors-viewer", password: "viewer-password", role: "viewer" })
    const context = await browser.createBrowserContext()
    try {
      const viewerPage = await context.newPage()
      await viewerPage.setViewport(viewport)
      await signIn(viewerPage, server.baseUrl, "cors-viewer", "viewer-password")
      expect(await viewerPage.$eval("nav.side", (e) => e.textContent ?? "")).not.toContain("Browser apps")
      await go(viewerPage, "#/cors")
      await waitText(viewerPage, "Structures")
      expect(await viewerPage.$("textarea[name=allowed-origins]")).toBeNull()
      expect(await writeControls(viewerPage)).toEqual([])
    } finally {
      await context.close()
    }
  }, 90_000)
})
