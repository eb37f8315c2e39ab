// The example app (examples/task-board) in a real browser: Debian's Chromium (CHROMIUM_PATH, else /usr/bin/chromium)
// driven by puppeteer-core. The app is served by its own server on another port than the Troupe node (another
// origin) and reaches the node only through CORS, allowed by the workspace's /settings/cors. It signs in, creates a
// task that a second page (another user, its own storage) sees appear over the event stream, edits it there and the
// first page follows, filters the list, and shows the 400 details of a bad task next to the fields they name. The
// same app served from an origin the node does not allow cannot sign in: the browser refuses the answers. Every wait
// is on a condition, never on time. Without Chromium the suite fails, saying how to install it.
//
// With TROUPE_EXAMPLE_SCREENSHOTS set to a directory (`npm run screenshots` sets docs/browser, docs/browser.md's
// image) the board is saved there as a PNG; the walk and its assertions are the same either way.
import * as esbuild from "esbuild"
import * as Fs from "node:fs"
import * as Path from "node:path"
import puppeteer, { type Browser, type Page } from "puppeteer-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startTaskBoard, type TaskBoard } from "../examples/task-board/server.ts"
import { createUser } from "./support/IdentityHelpers.ts"
import { startServer, type TestServer } from "./support/TestServer.ts"

const chromium = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium"
const screenshots = process.env.TROUPE_EXAMPLE_SCREENSHOTS
/** generous: a loaded 2-core machine runs the node, Chromium and the test at once */
const WAIT = 45_000

// The callbacks given to the page run in Chromium; the node's type-check has no DOM library, so they see these.
declare const document: {
  readonly body: { readonly innerText: string }
  readonly querySelector: (selector: string) => { readonly textContent: string | null } | null
  readonly querySelectorAll: (selector: string) => { readonly length: number }
}

const missingChromium = () =>
  new Error(
    `Chromium was not found at ${chromium}. The example app's browser test drives a real Chromium: install Debian's ` +
      "(`apt-get update && apt-get install -y chromium`) or point CHROMIUM_PATH at a Chromium or Chrome binary."
  )

/** Waits until `selector` is on the page; on timeout, says what the page showed instead. */
const waitFor = async (page: Page, selector: string) => {
  try {
    await page.waitForSelector(selector, { timeout: WAIT })
  } catch (cause) {
    const shown = await page.evaluate(() => document.body.innerText).catch(() => "(page gone)")
    throw new Error(`waiting for ${selector}; the page shows:\n${shown.slice(0, 2000)}`, { cause })
  }
}

/** Waits until the text of `selector` (the first match) includes `text`. */
const waitText = async (page: Page, selector: string, text: string) => {
  try {
    await page.waitForFunction((s, t) => (document.querySelector(s)?.textContent ?? "").includes(t), { timeout: WAIT }, selector, text)
  } catch (cause) {
    const shown = await page.evaluate(() => document.body.innerText).catch(() => "(page gone)")
    throw new Error(`waiting for ${JSON.stringify(text)} in ${selector}; the page shows:\n${shown.slice(0, 2000)}`, { cause })
  }
}

/** Replaces the text of an input. */
const retype = async (page: Page, selector: string, text: string) => {
  await page.click(selector, { count: 3 })
  await page.keyboard.press("Backspace")
  if (text !== "") await page.type(selector, text)
}

const signIn = async (page: Page, url: string, username: string, password: string) => {
  await page.goto(url)
  await waitFor(page, "input[name=username]")
  await page.type("input[name=username]", username)
  await page.type("input[name=password]", password)
  await page.click("button[type=submit]")
}

/** The titles the board lists, in order. */
const titles = (page: Page) => page.$$eval("li[data-task]", (lis) => lis.map((li) => li.getAttribute("data-task") ?? ""))

/** Waits until the board lists exactly `expected`, in that order. */
const waitTitles = async (page: Page, expected: ReadonlyArray<string>) => {
  try {
    await page.waitForFunction(
      (want) => {
        const shown = [
          ...(document.querySelectorAll("li[data-task]") as unknown as Iterable<{ getAttribute: (n: string) => string | null }>)
        ]
        return JSON.stringify(shown.map((li) => li.getAttribute("data-task"))) === want
      },
      { timeout: WAIT },
      JSON.stringify(expected)
    )
  } catch (cause) {
    throw new Error(`waiting for the tasks ${JSON.stringify(expected)}; the board lists ${JSON.stringify(await titles(page))}`, { cause })
  }
}

describe("the example app in Chromium, on its own origin", () => {
  let server: TestServer
  let browser: Browser
  let board: TaskBoard
  let stranger: TaskBoard
  const pageErrors: Array<string> = []
  const consoleLines: Array<string> = []

  const watch = (page: Page) => {
    page.on("pageerror", (e) => pageErrors.push(e instanceof Error ? e.message : String(e)))
    page.on("console", (m) => consoleLines.push(m.text()))
    return page
  }

  beforeAll(async () => {
    if (!Fs.existsSync(chromium)) throw missingChromium()
    const [started, launched] = await Promise.all([
      startServer(),
      puppeteer.launch({ executablePath: chromium, headless: true, args: ["--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"] })
    ])
    server = started
    browser = launched
    board = await startTaskBoard({ troupeUrl: server.baseUrl, workspace: "default", port: 0 })
    stranger = await startTaskBoard({ troupeUrl: server.baseUrl, workspace: "default", port: 0 })
    expect(new URL(board.url).origin).not.toBe(new URL(server.baseUrl).origin)
    const cors = await server.request("PUT", `${server.base}/settings/cors`, {
      token: await server.adminToken(),
      body: { allowedOrigins: [board.url] }
    })
    expect(cors.status, cors.text).toBe(200)
  })

  afterAll(async () => {
    await browser?.close()
    await board?.close()
    await stranger?.close()
    await server?.close()
  })

  it("signs in, creates a task a second page sees live, edits and filters, and shows the 400 details by their fields", async () => {
    const first = watch(await browser.newPage())
    await first.setViewport({ width: 1100, height: 640 })
    await signIn(first, board.url, "admin", server.adminPassword)
    // the admin's first visit sets the board up (the tasks structure); the stream is open
    await waitFor(first, "[data-live=on]")
    await waitText(first, "ul.tasks", "No tasks here yet.")

    // a second user, in a context of their own (no shared storage): a developer
    const developer = await createUser(server, await server.adminToken(), "developer")
    const context = await browser.createBrowserContext()
    const second = watch(await context.newPage())
    await signIn(second, board.url, developer.username, developer.password)
    await waitFor(second, "[data-live=on]")

    // created on the first page, it appears on the second without a reload
    await first.type("input[name=title]", "Write the launch notes")
    await retype(first, "input[name=priority]", "2")
    await first.type("input[name=assignee]", "ana")
    await first.click("form.task-form button[type=submit]")
    await waitFor(second, 'li[data-task="Write the launch notes"]')
    await waitFor(first, 'li[data-task="Write the launch notes"]')
    expect(await second.$eval('li[data-task="Write the launch notes"] .meta', (e) => e.textContent)).toBe("P2 · ana")

    // edited on the second page, the first follows
    await second.click('li[data-task="Write the launch notes"]')
    await waitFor(second, "form.task-form[data-mode=edit]")
    await second.select("select[name=status]", "doing")
    await second.click("form.task-form button[type=submit]")
    await waitText(first, 'li[data-task="Write the launch notes"] .status', "doing")

    // another task, then the filters: by status, and a search of the titles
    await first.type("input[name=title]", "Book the venue")
    await first.click("form.task-form button[type=submit]")
    await waitFor(second, 'li[data-task="Book the venue"]')
    const both = ["Book the venue", "Write the launch notes"]
    await waitTitles(first, both)
    await first.select("select[name=filter-status]", "doing")
    await waitTitles(first, ["Write the launch notes"])
    await first.select("select[name=filter-status]", "all")
    await waitTitles(first, both)
    await first.type("input[name=search]", "venue")
    await waitTitles(first, ["Book the venue"])
    await retype(first, "input[name=search]", "")
    await waitTitles(first, both)

    // a bad task: the server's 400 details, each shown by the field it names; nothing is created
    await first.type("input[name=title]", "ab")
    await retype(first, "input[name=priority]", "9")
    await first.click("form.task-form button[type=submit]")
    await waitFor(first, "label:has(input[name=title]) [data-error-for=title]")
    await waitFor(first, "label:has(input[name=priority]) [data-error-for=priority]")
    expect(await first.$$eval("[data-error-for]", (els) => els.map((e) => e.getAttribute("data-error-for")).sort())).toEqual([
      "priority",
      "title"
    ])
    expect(await first.$eval("[data-error=form]", (e) => e.textContent)).toMatch(/invalid|validation/i)
    // the list shows the latest answer (not a late one for a search typed earlier)
    expect(await titles(first)).toEqual(both)
    const stored = await server.request("GET", `${server.base}/records?structureId=tasks&limit=10`, { token: await server.adminToken() })
    expect(stored.body.results.map((r: { data: { title: string } }) => r.data.title).sort()).toEqual(both)
    if (screenshots !== undefined && screenshots !== "") {
      Fs.mkdirSync(Path.resolve(screenshots), { recursive: true })
      await first.mouse.move(0, 0)
      await first.screenshot({ path: Path.join(Path.resolve(screenshots), "task-board.png") })
    }
    // the token never reached the address bar or the page's storage beyond this tab's session
    expect(first.url()).not.toContain("token")
    expect(pageErrors).toEqual([])
    await context.close()
  })

  it("sendWithProgress (the storage upload helper's seam) sends across origins and reports the upload's progress", async () => {
    // the client's helper, bundled for the browser and put on a page of the allowed origin
    const built = await esbuild.build({
      stdin: {
        contents:
          'import { handedToken } from "../packages/client-fetch/src/TokenSource.ts"\n' +
          'import { sendWithProgress } from "../packages/client-fetch/src/Progress.ts"\n' +
          "Object.assign(globalThis, { troupe: { handedToken, sendWithProgress } })\n",
        resolveDir: import.meta.dirname,
        loader: "ts"
      },
      bundle: true,
      platform: "browser",
      format: "iife",
      write: false,
      logLevel: "silent"
    })
    const page = watch(await browser.newPage())
    await page.setBypassCSP(true)
    await page.goto(board.url)
    await page.addScriptTag({ content: built.outputFiles[0]!.text })
    const token = await server.adminToken()
    // a big body (a long title is refused by the tasks structure: a 400 with its details, read by the page)
    const outcome = await page.evaluate(
      async (url, t) => {
        const { troupe } = globalThis as unknown as {
          troupe: { handedToken: (o: object) => unknown; sendWithProgress: (r: object) => Promise<any> }
        }
        const seen: Array<{ loaded: number; total: number | undefined }> = []
        const body = JSON.stringify({ structureId: "tasks", data: { title: "x".repeat(300_000), status: "todo", priority: 1 } })
        const res = await troupe.sendWithProgress({
          url,
          method: "POST",
          body,
          headers: { "content-type": "application/json" },
          token: troupe.handedToken({ initial: t }),
          onProgress: (p: { loaded: number; total: number | undefined }) => seen.push(p)
        })
        return { status: res.status, code: res.error?.code, field: res.error?.details?.[0]?.field, seen, size: body.length }
      },
      `${server.baseUrl}${server.base}/records`,
      token
    )
    expect(outcome).toMatchObject({ status: 400, code: "VALIDATION_ERROR", field: "data.title" })
    expect(outcome.seen.length).toBeGreaterThan(0)
    expect(outcome.seen.at(-1)).toEqual({ loaded: outcome.size, total: outcome.size })
    expect(pageErrors).toEqual([])
  })

  it("served from an origin the node does not allow, the browser refuses Troupe's answers", async () => {
    const page = watch(await browser.newPage())
    await signIn(page, stranger.url, "admin", server.adminPassword)
    await waitText(page, "[data-error=signin]", "did not answer this page")
    expect(consoleLines.some((l) => l.includes("blocked by CORS policy") && l.includes(new URL(stranger.url).origin))).toBe(true)
    // the page's own calls, with a valid token: refused by the browser (the node answered its preflight with no grant)
    const token = await server.adminToken()
    const outcome = (url: string, headers: Record<string, string>) =>
      page.evaluate(
        (u, h) =>
          fetch(u, { headers: h }).then(
            (r) => `answered ${r.status}`,
            (e: Error) => e.name
          ),
        url,
        headers
      )
    expect(await outcome(`${server.baseUrl}${server.base}/records?structureId=tasks`, { authorization: `Bearer ${token}` })).toBe(
      "TypeError"
    )
    expect(await outcome(`${server.baseUrl}/health`, {})).toBe("TypeError")
    // from the allowed origin, the same calls are answered
    const allowed = watch(await browser.newPage())
    await allowed.goto(board.url)
    expect(
      await allowed.evaluate(
        (u, h) => fetch(u, { headers: h }).then((r) => `answered ${r.status}`),
        `${server.baseUrl}${server.base}/records?structureId=tasks`,
        { authorization: `Bearer ${token}` }
      )
    ).toBe("answered 200")
    expect(pageErrors).toEqual([])
  })
})
