import { defineConfig } from "vitest/config"

// One config for both backends: DATABASE_URL set -> every server a test starts gets a fresh PostgreSQL database.
export default defineConfig({
  test: {
    include: ["packages/*/src/**/*.test.ts", "test/**/*.test.ts"],
    testTimeout: 60_000,
    hookTimeout: 300_000,
    pool: "forks",
    maxWorkers: 2,
    reporters: ["default"]
  }
})
