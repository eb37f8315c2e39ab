import { defineConfig } from "vitest/config"

// One config for both backends: DATABASE_URL set -> every server a test starts gets a fresh PostgreSQL database.
// TROUPE_TEST_RETRY (CI only) retries a failed test that many times; test/support/FlakyReporter.ts names every test
// that needed it.
const retry = Number(process.env.TROUPE_TEST_RETRY ?? 0)

export default defineConfig({
  test: {
    include: ["packages/*/src/**/*.test.ts", "test/**/*.test.ts"],
    testTimeout: 60_000,
    hookTimeout: 300_000,
    pool: "forks",
    maxWorkers: 2,
    retry,
    reporters: ["default", "./test/support/FlakyReporter.ts"]
  }
})
