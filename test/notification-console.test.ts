// The console's Notifications screen in a real Chromium (puppeteer-core, as test/console.test.ts drives it): the
// template editor's preview follows the typing (escaped output, a missing variable named), a captured mail opens
// rendered (its HTML in a sandboxed frame, the text part beside it), and the settings tab says where mail goes and
// answers a test send. TROUPE_CONSOLE_SCREENSHOTS=<dir> saves the pictures.
import * as Fs from "node:fs"
import * as Path from "node:path"
import puppeteer, { type Browser, type Page } from "puppeteer-core"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { startServer, type TestServer } from "./support/TestServer.ts"

const chromium = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium"
const screenshots = process.env.TROUPE_CONSOLE_SCREENSHOTS

// The callbacks given to the page run in Chromium; the node's type-check has no DOM library, so they see these.
declare const document: {
  readonly body: { readonly innerText: string }
  readonly querySelector: (
    selector: string
  ) => { readonly innerText: string; readonly getAttribute: (name: string) => string | null } | null
}
declare const window: { readonly location: { hash: string } }

const waitText = async (page: Page, text: string, timeout = 30_000) => {
  try {
    await page.waitForFunction((t) => document.body.innerText.includes(t), { timeout }, text)
  } catch (cause) {
    const shown = await page.evaluate(() => document.body.innerText).catch(() => "(page gone)")
    throw new Error(`waiting for ${JSON.stringify(text)}; the page shows:\n${shown.slice(0, 2000)}`, { cause })
  }
}

const snap = async (page: Page, name: string) => {
  if (screenshots === undefined || screenshots === "") return
  Fs.mkdirSync(Path.resolve(screenshots), { recursive: true })
  await page.screenshot({ path: `${Path.join(Path.resolve(screenshots), name)}.png` })
}

describe.runIf(Fs.existsSync(chromium))("the Notifications screen in Chromium", () => {
  let server: TestServer
  let browser: Browser
  let page: Page
  const base = "/notification/workspace/default/api/v1"

  beforeAll(async () => {
    ;[server, browser] = await Promise.all([
      startServer(),
      puppeteer.launch({ executablePath: chromium, headless: true, args: ["--no-sandbox", "--disable-dev-shm-usage"] })
    ])
    page = await browser.newPage()
    await page.setViewport({ width: 1280, height: 800 })
    await page.goto(`${server.baseUrl}/console`)
    await page.waitForSelector("input[name=username]")
    await page.type("input[name=username]", "admin")
    await page.type("input[name=password]", server.adminPassword)
    await page.click("button[type=submit]")
    await page.waitForSelector("nav.side")
  }, 300_000)

  afterAll(async () => {
    await browser?.close()
    await server?.close()
  })

  it("edits a template with a live preview", async () => {
    await page.evaluate(() => (window.location.hash = "#/notifications/templates"))
    await waitText(page, "New template")
    await page.click("[data-write='write:notifications']")
    await page.waitForSelector("input[name=template-name]")
    await page.type("input[name=template-name]", "welcome")
    await page.type("input[name=template-subject]", "Hi {{ name }}")
    await page.type("textarea[name=template-html]", "<p>Hello {{ name }}</p>")
    // no sample value for `name` yet: the preview names what is missing
    await waitText(page, "variables.name")
    await page.click("textarea[name=template-variables]", { count: 3 })
    await page.keyboard.press("Backspace")
    await page.type("textarea[name=template-variables]", '{"name": "<Ann>"}')
    await waitText(page, "Subject: Hi <Ann>")
    await page.waitForFunction(() => document.querySelector("[data-testid=mail-text]")?.innerText.includes("Hello <Ann>") === true, {
      timeout: 30_000
    })
    const frame = await page.$eval("[data-testid=mail-html]", (e) =>
      (e as unknown as { getAttribute: (n: string) => string }).getAttribute("srcdoc")
    )
    expect(frame).toBe("<p>Hello &lt;Ann&gt;</p>")
    await snap(page, "notifications-template")
    await page.click("button[type=submit][data-write='write:notifications']")
    await waitText(page, "v1")
    const saved = await server.request("GET", `${base}/templates/welcome`, { token: await server.adminToken() })
    expect(saved.body).toMatchObject({ name: "welcome", variables: ["name"], version: 1 })
  }, 120_000)

  it("shows a captured mail rendered, and the settings with a test send", async () => {
    const token = await server.adminToken()
    const sent = await server.request("POST", `${base}/email`, {
      token,
      body: { to: "ann@example.com", template: "welcome", variables: { name: "Ann" } }
    })
    expect(sent.status).toBe(202)
    await page.evaluate(() => (window.location.hash = "#/notifications"))
    await waitText(page, "captured")
    await page.evaluate((id) => (window.location.hash = `#/notifications/${id}`), sent.body.id as string)
    await waitText(page, "Message-ID")
    expect(await page.$eval("[data-testid=message-subject]", (e) => (e as unknown as { innerText: string }).innerText)).toBe("Hi Ann")
    const html = await page.$eval("[data-testid=mail-html]", (e) =>
      (e as unknown as { getAttribute: (n: string) => string }).getAttribute("srcdoc")
    )
    expect(html).toBe("<p>Hello Ann</p>")
    await snap(page, "notifications-message")

    await page.evaluate(() => (window.location.hash = "#/notifications/settings"))
    await waitText(page, "Email goes through capture")
    await page.type("input[name=test-email]", "probe@example.com")
    const [testButton] = await page.$$("xpath/.//button[contains(., 'Send test email')]")
    await testButton!.click()
    await waitText(page, "email: captured through capture")
    await snap(page, "notifications-settings")
  }, 120_000)
})
