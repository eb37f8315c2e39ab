// The console's browser tests' ground: Debian's Chromium (CHROMIUM_PATH, else /usr/bin/chromium) driven by
// puppeteer-core, and the steps every walk takes (sign in, go to a screen, wait for a text, count a table's rows,
// save a screenshot when TROUPE_CONSOLE_SCREENSHOTS names a directory).
import * as Fs from "node:fs"
import * as Path from "node:path"
import puppeteer, { type Browser, type Page } from "puppeteer-core"

export const chromium = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium"
export const screenshots = process.env.TROUPE_CONSOLE_SCREENSHOTS
/** Every page of the suite has this size, so the screenshots have it too. */
export const viewport = { width: 1280, height: 800 }

// The callbacks given to the page run in Chromium; the node's type-check has no DOM library, so they see these.
declare const document: { readonly body: Rendered; readonly querySelectorAll: (selector: string) => { readonly length: number } }
declare const window: { readonly location: { hash: string; readonly search: string } }
export interface Rendered {
  readonly innerText: string
}
interface Styled {
  readonly style: { visibility: string }
}

export const missingChromium = () =>
  new Error(
    `Chromium was not found at ${chromium}. The console's browser test drives a real Chromium: install Debian's ` +
      "(`apt-get update && apt-get install -y chromium`) or point CHROMIUM_PATH at a Chromium or Chrome binary."
  )

/** Waits until the page's visible text contains `text`. */
export const waitText = async (page: Page, text: string, timeout = 15_000) => {
  try {
    await page.waitForFunction((t) => document.body.innerText.includes(t), { timeout }, text)
  } catch (cause) {
    // the page's text says what the screen showed instead (an error, a spinner that never ended)
    const shown = await page.evaluate(() => document.body.innerText).catch(() => "(page gone)")
    throw new Error(`waiting for ${JSON.stringify(text)}; the page shows:\n${shown.slice(0, 2000)}`, { cause })
  }
}

export const go = async (page: Page, hash: string) => {
  await page.evaluate((h) => (window.location.hash = h), hash)
}

/** Replaces the text of an input (select all, type). */
export const retype = async (page: Page, selector: string, text: string) => {
  await page.click(selector, { count: 3 })
  await page.keyboard.press("Backspace")
  await page.type(selector, text)
}

export const signIn = async (page: Page, base: string, username: string, password: string) => {
  await page.goto(`${base}/console`)
  await page.waitForSelector("input[name=username]")
  await page.type("input[name=username]", username)
  await page.type("input[name=password]", password)
  await page.click("button[type=submit]")
  await page.waitForSelector("nav.side")
}

/** Saves the page as `<name>.png` in TROUPE_CONSOLE_SCREENSHOTS; does nothing when it is not set. */
export const snap = async (page: Page, name: string) => {
  if (screenshots === undefined || screenshots === "") return
  const dir = Path.resolve(screenshots)
  Fs.mkdirSync(dir, { recursive: true })
  await page.mouse.move(0, 0) // no hover state in the picture
  // nor the toasts of earlier steps (still up for their 4 s): hidden for the picture only
  const toasts = (visibility: string) =>
    page.$$eval(".toasts", (els, v) => els.forEach((e) => ((e as unknown as Styled).style.visibility = v)), visibility)
  await toasts("hidden")
  try {
    await page.screenshot({ path: `${Path.join(dir, name)}.png` })
  } finally {
    await toasts("")
  }
}

/** The number of rows in the table `selector`. */
export const rows = (page: Page, selector: string) => page.$$eval(`${selector} tbody tr`, (trs) => trs.length)

/** The row count of a table once it has at least `count` rows (a screen's text can show before its table fills). */
export const rowsOnce = async (page: Page, selector: string, count: number) => {
  await page
    .waitForFunction((sel, n) => document.querySelectorAll(sel).length >= n, { timeout: 15_000 }, `${selector} tbody tr`, count)
    .catch(() => undefined)
  return rows(page, selector)
}

export const writeControls = (page: Page) => page.$$eval("[data-write]", (els) => els.map((e) => e.textContent?.trim() ?? ""))

/** Chromium, headless, as the tests run it; fails saying how to install it when it is missing. */
export const launchChromium = (): Promise<Browser> => {
  if (!Fs.existsSync(chromium)) throw missingChromium()
  return puppeteer.launch({
    executablePath: chromium,
    headless: true,
    args: ["--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"]
  })
}
