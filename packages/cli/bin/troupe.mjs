#!/usr/bin/env node
// The `troupe` command. In the repository it runs the TypeScript source directly (Node 24 strips the types, as
// `node --experimental-strip-types packages/cli/src/main.ts` does); an installed package runs the JavaScript that
// `npm pack` built into dist/ (Node does not strip types under node_modules).
import { existsSync } from "node:fs"

const source = new URL("../src/main.ts", import.meta.url)
await import(existsSync(source) ? source.href : new URL("../dist/main.js", import.meta.url).href)
