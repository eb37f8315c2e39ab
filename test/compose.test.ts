// No Docker engine or Kubernetes runs here, so the deployment files are checked as data: the compose file (PostgreSQL
// 15, three nodes on one database with distinct runner hosts, a load balancer in front), the Dockerfile (production
// dependencies, a non-root user, a health check on /ready) and the Kubernetes manifest; every variable they set is
// one the config module reads.
import * as Fs from "node:fs"
import * as Path from "node:path"
import { describe, expect, it } from "vitest"
import { parse, parseAllDocuments } from "yaml"

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
      expect(s.build).toBe(".")
      expect(s.command).toBeUndefined()
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

describe("Dockerfile", () => {
  const dockerfile = Fs.readFileSync(Path.join(root, "Dockerfile"), "utf8")
  it("installs production dependencies once, at build time, and runs as an unprivileged user", () => {
    expect(dockerfile).toMatch(/^FROM node:24[\w.-]* AS deps$/m)
    expect(dockerfile).toContain("npm ci --omit=dev")
    expect(dockerfile).toMatch(/^USER node$/m)
    expect(dockerfile).toMatch(/^HEALTHCHECK [\s\S]*\/ready/m)
    expect(dockerfile).toContain("packages/server/src/main.ts")
  })
})

describe("deploy/kubernetes/troupe.yaml", () => {
  const docs = parseAllDocuments(Fs.readFileSync(Path.join(root, "deploy/kubernetes/troupe.yaml"), "utf8")).map((d) => d.toJS())
  const byKind = (kind: string) => docs.filter((d) => d.kind === kind)
  const set = byKind("StatefulSet")[0]
  const container = set.spec.template.spec.containers[0]
  const env = Object.fromEntries(container.env.map((e: any) => [e.name, e]))

  it("gives each node a runner address through a headless service", () => {
    const headless = byKind("Service").find((s) => s.spec.clusterIP === "None")
    expect(headless).toBeDefined()
    expect(set.spec.serviceName).toBe(headless.metadata.name)
    expect(env.TROUPE_RUNNER_HOST.value).toContain(`.${headless.metadata.name}.`)
    expect(headless.spec.ports[0].port).toBe(Number(env.TROUPE_RUNNER_PORT.value))
  })

  it("is ready on /ready and waits longer than a drain before killing", () => {
    expect(container.readinessProbe.httpGet.path).toBe("/ready")
    expect(set.spec.template.spec.terminationGracePeriodSeconds).toBeGreaterThanOrEqual(30)
    expect(set.spec.template.spec.securityContext.runAsNonRoot).toBe(true)
  })

  it("sets only variables the config module reads", () => {
    for (const name of Object.keys(env).filter((n) => !n.startsWith("POD_"))) {
      expect(configSource, name).toContain(`"${name}"`)
    }
  })
})
