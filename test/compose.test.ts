// No Docker engine runs here, so the compose file is checked as data: PostgreSQL 15, three nodes on one database
// with distinct runner hosts, a load balancer in front, and every variable it sets one the config module reads.
import * as Fs from "node:fs"
import * as Path from "node:path"
import { describe, expect, it } from "vitest"
import { parse } from "yaml"

const root = Path.resolve(import.meta.dirname, "..")
const compose = parse(Fs.readFileSync(Path.join(root, "docker-compose.yml"), "utf8"), { merge: true })
const configSource = Fs.readFileSync(Path.join(root, "packages/server/src/platform/AppConfig.ts"), "utf8")

describe("docker-compose.yml", () => {
  const nodes = Object.entries<any>(compose.services).filter(([name]) => name.startsWith("troupe-"))

  it("runs PostgreSQL 15, three Troupe nodes and a load balancer", () => {
    expect(compose.services.postgres.image).toMatch(/^postgres:15/)
    expect(nodes).toHaveLength(3)
    expect(compose.services.lb.ports).toContain("8080:8080")
  })

  it("points every node at the same database, each with its own runner address", () => {
    const urls = new Set(nodes.map(([, s]) => s.environment.DATABASE_URL))
    expect(urls.size).toBe(1)
    const runners = new Set(nodes.map(([, s]) => `${s.environment.TROUPE_RUNNER_HOST}:${s.environment.TROUPE_RUNNER_PORT}`))
    expect(runners.size).toBe(3)
    for (const [name, s] of nodes) {
      expect(s.environment.TROUPE_RUNNER_HOST).toBe(name)
      expect(s.environment.HOST).toBe("0.0.0.0")
      expect(s.command.join(" ")).toContain("npm start")
    }
  })

  it("sets only variables the config module reads, and the balancer reaches each node's PORT", () => {
    for (const [name, s] of nodes) {
      for (const variable of Object.keys(s.environment)) {
        expect(configSource, `${name} sets ${variable}`).toContain(`"${variable}"`)
      }
      expect(compose.configs.nginx.content).toContain(`${name}:${s.environment.PORT}`)
    }
  })
})
