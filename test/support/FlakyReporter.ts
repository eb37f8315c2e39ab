// CI runs the suite with one retry per test (TROUPE_TEST_RETRY=1 in .ci/run). A test that failed and then passed
// is flaky, which is a bug: this reporter names every such test at the end of the run, and appends it to the file
// TROUPE_FLAKY_FILE names so .ci/run can repeat the list in its summary. A test that fails twice fails the run.
import * as Fs from "node:fs"
import type { Reporter, TestCase } from "vitest/node"

export default class FlakyReporter implements Reporter {
  private readonly flaky: Array<string> = []

  onTestCaseResult(test: TestCase) {
    const retries = test.diagnostic()?.retryCount ?? 0
    if (retries > 0 && test.result().state === "passed") this.flaky.push(`${test.module.relativeModuleId} > ${test.fullName}`)
  }

  onTestRunEnd() {
    if (this.flaky.length === 0) return
    const text = this.flaky.map((name) => `flaky (failed, then passed on retry): ${name}\n`).join("")
    process.stdout.write(`\n${text}`)
    const file = process.env.TROUPE_FLAKY_FILE
    if (file !== undefined && file !== "") Fs.appendFileSync(file, text)
  }
}
