// The admin console in a real browser: Debian's Chromium (CHROMIUM_PATH, else /usr/bin/chromium) driven by
// puppeteer-core against a node started as `npm start` runs it. An admin signs in, creates a structure (seeing the
// live validation), adds and edits a record, runs a query, creates a function, test-runs it and finds the run, then
// walks the admin-only screens (live activity, triggers, webhooks, service accounts, members and roles) with data
// made over the API; a viewer sees no write control on any screen, and the server refuses the viewer's token the
// writes anyway. Without Chromium the suite fails, saying how to install it: a browser test that skips would pass
// unseen.
//
// With TROUPE_CONSOLE_SCREENSHOTS set to a directory (`npm run screenshots` sets docs/console, the README's images)
// each screen is also saved there as a PNG once the walk has seen its data. Only the saving depends on the variable:
// the walk and its assertions are the same either way.
import type { Browser, Page } from "puppeteer-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { computeClient } from "./support/compute.ts"
import {
  go,
  launchChromium,
  type Rendered,
  retype,
  rowsOnce,
  signIn,
  snap,
  viewport,
  waitText,
  writeControls
} from "./support/ConsolePage.ts"
import { startServer, type TestServer } from "./support/TestServer.ts"
import { type Receiver, startReceiver } from "./support/WebhookReceiver.ts"
import { sleep } from "./support/wait.ts"

// The callbacks given to the page run in Chromium; the node's type-check has no DOM library, so they see these.
declare const document: { readonly body: Rendered; readonly querySelectorAll: (selector: string) => { readonly length: number } }
declare const window: { readonly location: { hash: string; readonly search: string } }
declare const localStorage: object

describe("admin console in Chromium", () => {
  let server: TestServer
  let browser: Browser
  let page: Page
  let structureId = ""
  let recordId = ""
  let functionId = ""
  let receiver: Receiver | undefined
  const pageErrors: Array<string> = []

  beforeAll(async () => {
    const [started, launched] = await Promise.all([startServer(), launchChromium()])
    server = started
    browser = launched
    const token = await server.adminToken()
    const viewer = await server.request("POST", `${server.base}/members`, {
      token,
      body: { username: "console-viewer", password: "viewer-password", role: "viewer" }
    })
    expect(viewer.status, viewer.text).toBe(201)
    page = await browser.newPage()
    await page.setViewport(viewport)
    page.on("pageerror", (e) => pageErrors.push(e instanceof Error ? e.message : String(e)))
  })

  afterAll(async () => {
    await browser?.close()
    await receiver?.close()
    await server?.close()
  })

  it("serves the console with no build step: the page, hashed gzipped assets, a contract 404", async () => {
    const html = await fetch(`${server.baseUrl}/console`)
    expect(html.status).toBe(200)
    expect(html.headers.get("content-type")).toContain("text/html")
    expect(html.headers.get("cache-control")).toBe("no-cache")
    expect(html.headers.get("content-security-policy")).toContain("script-src 'self'")
    const text = await html.text()
    const script = /src="(\/console\/assets\/main-[\w-]+\.js)"/.exec(text)?.[1]
    expect(script).toBeDefined()
    const asset = await fetch(`${server.baseUrl}${script}`, { headers: { "accept-encoding": "gzip" } })
    expect(asset.status).toBe(200)
    expect(asset.headers.get("cache-control")).toContain("immutable")
    expect(asset.headers.get("content-type")).toContain("javascript")
    expect((await fetch(`${server.baseUrl}/console/`)).status).toBe(200)
    const missing = await server.request("GET", "/console/assets/main-NOPE.js")
    expect(missing.status).toBe(404)
    expect(missing.body).toMatchObject({ code: "NOT_FOUND", statusCode: 404 })
  })

  it("signs in, creates a structure with live validation, adds and edits a record, runs a query", async () => {
    await signIn(page, server.baseUrl, "admin", server.adminPassword)
    expect(await page.evaluate(() => window.location.search + window.location.hash)).not.toContain("token")
    expect(await page.evaluate(() => Object.keys(localStorage).join())).not.toContain("session")

    // a structure: the live validation names the problem, then passes
    await page.click("button[data-write]::-p-text(New structure)")
    await page.waitForSelector("input[name=structure-name]")
    await page.type("input[name=structure-name]", "Books")
    await page.click("button::-p-text(+ Add property)")
    await waitText(page, "properties[0].name")
    await page.type("input[aria-label='properties[0].name']", "title")
    await page.click("div[data-property=title] label.check input")
    await page.click("button::-p-text(+ Add property)")
    await page.type("input[aria-label='properties[1].name']", "pages")
    await page.select("select[aria-label='properties[1].type']", "number")
    await waitText(page, "The definition is valid")
    await page.click("button::-p-text(Create structure)")
    await page.waitForFunction(() => /^#\/structures\/[0-9a-f-]{36}$/.test(window.location.hash))
    structureId = await page.evaluate(() => window.location.hash.split("/")[2]!)
    await waitText(page, "v1")
    await waitText(page, "The definition is valid")
    await snap(page, "structure-editor")

    // a record: the form checks the schema as it is filled in
    await go(page, "#/records/books")
    await waitText(page, "No records yet.")
    await page.click("button::-p-text(New record)")
    await page.waitForSelector("input[name=title]")
    await waitText(page, "is required")
    await page.type("input[name=pages]", "many")
    await waitText(page, "must be a number")
    await retype(page, "input[name=pages]", "412")
    await page.type("input[name=title]", "Dune")
    await page.click("button::-p-text(Create record)")
    await page.waitForFunction(() => /^#\/records\/books\/[0-9a-f-]{36}$/.test(window.location.hash))
    recordId = await page.evaluate(() => window.location.hash.split("/")[3]!)
    await waitText(page, "v1")

    // edit it: version 2, with the history to restore from
    await retype(page, "input[name=pages]", "500")
    await page.click("button::-p-text(Save)")
    await waitText(page, "Saved as version 2")
    await snap(page, "record")
    await page.click("button[role=tab]::-p-text(History)")
    await waitText(page, "Restore this version")
    const stored = await server.request("GET", `${server.base}/records/${recordId}`, { token: await server.adminToken() })
    expect(stored.body).toMatchObject({ version: 2, data: { title: "Dune", pages: 500 } })

    // the table lists it; the query language finds it
    await go(page, "#/records/books")
    await waitText(page, "Dune")
    await go(page, "#/query")
    // the statement starts as `FROM <first structure> LIMIT 20` once the structures have loaded: wait for it, or it
    // could arrive in the middle of the typing
    const statement = await page.waitForSelector("textarea[name=query]")
    await page.waitForFunction((e) => (e as unknown as { value: string }).value.startsWith("FROM books"), {}, statement)
    await retype(page, "textarea[name=query]", "SELECT title, pages FROM books WHERE pages > 100")
    await page.click("button::-p-text(Run)")
    await page.waitForSelector("[data-testid=query-summary]")
    expect(await page.$eval("[data-testid=query-summary]", (e) => e.textContent)).toMatch(/^1 row in \d+ ms$/)
    expect(await page.$eval("[data-testid=query-results]", (e) => e.textContent)).toContain("Dune")
    await snap(page, "query")
  })

  it("creates a function in the code editor, test-runs it with params, and finds the run", async () => {
    await go(page, "#/functions")
    await page.click("button::-p-text(New function)")
    await page.waitForSelector("input[name=function-name]")
    await page.type("input[name=function-name]", "double")
    await page.waitForSelector(".cm-content")
    await page.click(".cm-content")
    await page.keyboard.down("Control")
    await page.keyboard.press("a")
    await page.keyboard.up("Control")
    await page.keyboard.press("Backspace")
    // CodeMirror closes brackets and quotes: typing the closing ones steps over them
    await page.keyboard.type("async function run() { api.log('doubling'); return { success: true, data: executionParams.n * 2 } }")
    expect(await page.$eval(".cm-content", (e) => (e as unknown as Rendered).innerText)).toBe(
      "async function run() { api.log('doubling'); return { success: true, data: executionParams.n * 2 } }"
    )
    await retype(page, "textarea[name=run-params]", '{"n": 21}')
    await page.click("button::-p-text(Test run)")
    await page.waitForSelector("[data-testid=run-outcome][data-status=completed]", { timeout: 20_000 })
    const outcome = await page.$eval("[data-testid=run-outcome]", (e) => (e as unknown as Rendered).innerText)
    expect(outcome).toContain('"data": 42')
    expect(outcome).toContain("doubling")

    await page.click("button::-p-text(Create function)")
    await page.waitForFunction(() => /^#\/functions\/[0-9a-f-]{36}$/.test(window.location.hash))
    functionId = await page.evaluate(() => window.location.hash.split("/")[2]!)
    await waitText(page, "v1")

    // the test run is listed among the runs, and opens with its result
    await go(page, "#/runs")
    await page.waitForSelector("[data-testid=runs] a")
    await page.click("[data-testid=runs] a")
    await page.waitForSelector("[data-testid=run-outcome][data-status=completed]")
    expect(await page.$eval("[data-testid=run-outcome]", (e) => (e as unknown as Rendered).innerText)).toContain('"data": 42')
    expect(pageErrors).toEqual([])
  })

  it("walks the other screens with data made over the API: activity, lists, triggers, webhooks, accounts, members", async () => {
    const token = await server.adminToken()
    const api = computeClient(server, token)
    const created = async (method: string, path: string, body?: unknown) => {
      const res = await api.call(method, path, body)
      expect(res.status, `${method} ${path}: ${res.text}`).toBeLessThan(300)
      return res.body
    }

    // what the screens will list: a second structure and function, a webhook to a local receiver, three triggers,
    // two service accounts, an IAM group
    await created("POST", "/structures", {
      name: "Authors",
      recordSlug: "authors",
      properties: [
        { name: "name", type: "string", required: true },
        { name: "born", type: "number" }
      ]
    })
    const shelfReport = await api.createFunction(
      "shelf-report",
      [
        "// executionParams: this run's input; api: records, logs",
        "async function run() {",
        "  const shelves = executionParams.shelves ?? []",
        "  api.log(`counting ${shelves.length} shelves`)",
        "  return { success: true, data: { shelves: shelves.length } }",
        "}",
        ""
      ].join("\n"),
      "Counts the shelves it is given"
    )
    receiver = await startReceiver()
    const hook = await created("POST", "/webhooks", {
      name: "Books to the warehouse",
      url: `${receiver.url}/books`,
      events: ["record.created", "record.updated"],
      filters: { structure: "books" }
    })
    const nightly = await api.createTrigger({
      name: "nightly-double",
      description: "Doubles 2 every night in Paris",
      functionId,
      executionType: "scheduled",
      triggerMetadata: { scheduleType: "cron", cronExpression: "0 3 * * *", timezone: "Europe/Paris", params: { n: 2 } }
    })
    await api.createTrigger({
      name: "on-book-deleted",
      functionId,
      executionType: "event-driven",
      triggerMetadata: { event: "record_deleted", recordSlug: "books" }
    })
    const onDemand = await api.createTrigger({ name: "double-now", functionId, executionType: "on-demand", triggerMetadata: {} })
    await created("POST", "/service-accounts", { name: "ci-deployer", description: "Deploys functions from CI", role: "developer" })
    await created("POST", "/service-accounts", { name: "reporting", permissions: ["read:records", "read:structures"] })
    const group = await created("POST", "/groups", { name: "Schema keepers" })
    await created("POST", `/groups/${group.id}/policies`, { action: "manage", resource: "structures" })

    // live activity: four records created, one updated and a trigger executed over the API appear as they happen
    await go(page, "#/activity")
    await page.waitForSelector("[data-testid=connection]::-p-text(open)")
    const books: Record<string, string> = {}
    for (const [title, pages] of [
      ["Neuromancer", 271],
      ["Solaris", 204],
      ["Foundation", 255],
      ["Hyperion", 482]
    ] as const) {
      books[title] = (await created("POST", "/structures/books/records", { title, pages })).id
    }
    await created("PATCH", `/records/${books.Solaris}`, { data: { pages: 224 } })
    const executed = await created("POST", `/function-triggers/${onDemand.id}/execute`, { n: 5 })
    const run = await api.waitRun(executed.jobId)
    expect(run.result.data).toBe(10)
    await waitText(page, "function.completed")
    const activity = await page.$eval("[data-testid=activity]", (e) => (e as unknown as Rendered).innerText)
    expect(activity.split("record.created").length - 1).toBe(4)
    expect(activity).toContain("record.updated")
    expect(activity).toContain("trigger.fired")
    await snap(page, "activity")

    // the lists those writes filled
    await go(page, "#/records/books")
    await waitText(page, "Hyperion")
    expect(await rowsOnce(page, "table", 5)).toBe(5)
    await snap(page, "records")
    await go(page, "#/structures")
    await waitText(page, "Authors")
    expect(await page.evaluate(() => document.body.innerText)).toContain("Books")
    await snap(page, "structures")
    await go(page, "#/functions")
    await waitText(page, "shelf-report")
    expect(await page.evaluate(() => document.body.innerText)).toContain("double")
    await snap(page, "functions")

    // a saved function opens in the editor with its code, and test-runs with params
    await go(page, `#/functions/${shelfReport.id}`)
    await page.waitForFunction(() => document.body.innerText.includes("counting ${shelves.length} shelves"))
    await retype(page, "textarea[name=run-params]", '{"shelves": ["sf", "classics", "poetry"]}')
    await page.click("button::-p-text(Test run)")
    await page.waitForSelector("[data-testid=run-outcome][data-status=completed]", { timeout: 20_000 })
    const outcome = await page.$eval("[data-testid=run-outcome]", (e) => (e as unknown as Rendered).innerText)
    expect(outcome).toContain('"shelves": 3')
    expect(outcome).toContain("counting 3 shelves")
    await snap(page, "function-editor")

    // the runs: the test run of the previous test, the trigger's run, this test run; the trigger's run opens
    await go(page, "#/runs")
    await waitText(page, "double-now")
    expect(await rowsOnce(page, "[data-testid=runs]", 3)).toBe(3)
    await snap(page, "runs")
    await page.click(`[data-testid=runs] a[href$="${run.id}"]`)
    await page.waitForSelector("[data-testid=run-outcome][data-status=completed]")
    expect(await page.$eval("[data-testid=run-outcome]", (e) => (e as unknown as Rendered).innerText)).toContain('"data": 10')
    await waitText(page, "double-now")
    await snap(page, "run")

    // triggers: the list says when each fires; the cron one previews its next five times in its zone
    await go(page, "#/triggers")
    await waitText(page, "nightly-double")
    const triggers = await page.evaluate(() => document.body.innerText)
    expect(triggers).toContain("cron 0 3 * * * (Europe/Paris)")
    expect(triggers).toContain("record_deleted on books")
    await snap(page, "triggers")
    await go(page, `#/triggers/${nightly.id}`)
    await page.waitForSelector("[data-testid=schedule-preview] li")
    expect(await page.$$eval("[data-testid=schedule-preview] li", (lis) => lis.length)).toBe(5)
    await snap(page, "trigger")

    // webhooks: the list, and the hook's five deliveries (four creations, one update) to the receiver
    await receiver.waitFor((hits) => hits.length >= 5, 15_000, "five deliveries")
    const deadline = Date.now() + 15_000
    while ((await api.call("GET", `/webhooks/${hook.id}/deliveries?status=delivered`)).body.total < 5) {
      if (Date.now() > deadline) throw new Error("the five deliveries were not recorded as delivered")
      await sleep(50)
    }
    await go(page, "#/webhooks")
    await waitText(page, "Books to the warehouse")
    await snap(page, "webhooks")
    await go(page, `#/webhooks/${hook.id}`)
    await waitText(page, "No failed deliveries.")
    await page.waitForSelector("tbody tr")
    expect(await page.$$eval("tbody tr", (trs) => trs.filter((tr) => tr.textContent?.includes("delivered")).length)).toBe(5)
    await snap(page, "webhook")

    // service accounts, members and roles
    await go(page, "#/service-accounts")
    await waitText(page, "ci-deployer")
    expect(await page.evaluate(() => document.body.innerText)).toContain("read:records, read:structures")
    await snap(page, "service-accounts")
    await go(page, "#/members")
    await waitText(page, "console-viewer")
    await waitText(page, "Schema keepers")
    await snap(page, "members")
    expect(pageErrors).toEqual([])
  })

  it("shows a viewer no write control, and the server refuses the viewer's writes", async () => {
    const context = await browser.createBrowserContext()
    try {
      const viewerPage = await context.newPage()
      await viewerPage.setViewport(viewport)
      await signIn(viewerPage, server.baseUrl, "console-viewer", "viewer-password")
      const nav = await viewerPage.$eval("nav.side", (e) => (e as unknown as Rendered).innerText)
      expect(nav).toContain("Structures")
      expect(nav).not.toContain("Triggers")
      expect(nav).not.toContain("Service accounts")

      const screens: ReadonlyArray<readonly [string, string]> = [
        ["#/structures", "Books"],
        [`#/structures/${structureId}`, "Properties"],
        ["#/records/books", "Dune"],
        [`#/records/books/${recordId}`, "Created"],
        ["#/query", "Statement"],
        ["#/functions", "double"],
        [`#/functions/${functionId}`, "Description"],
        ["#/runs", "completed"]
      ]
      for (const [hash, loaded] of screens) {
        await go(viewerPage, hash)
        await waitText(viewerPage, loaded)
        expect(await writeControls(viewerPage), hash).toEqual([])
        for (const label of ["New structure", "New record", "Import…", "Save", "Delete", "New function", "Test run"]) {
          expect(await viewerPage.$(`button::-p-text(${label})`), `${hash}: ${label}`).toBeNull()
        }
      }

      // the same admin screens do show write controls
      await go(page, `#/records/books/${recordId}`)
      await waitText(page, "Created")
      expect(await writeControls(page)).toContain("Save")

      const token = await server.userToken("console-viewer", "viewer-password")
      const structure = await server.request("POST", `${server.base}/structures`, { token, body: { name: "Nope", properties: [] } })
      expect(structure.status).toBe(403)
      const record = await server.request("PATCH", `${server.base}/records/${recordId}`, { token, body: { data: { pages: 1 } } })
      expect(record.status).toBe(403)
      const run = await server.request("POST", `${server.base}/compute-functions/test`, {
        token,
        body: { code: "async function run() {}", params: {} }
      })
      expect(run.status).toBe(403)
    } finally {
      await context.close()
    }
  })
})
