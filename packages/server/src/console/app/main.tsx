// The console's entry point: bundled by ConsoleBundle.ts and loaded by index.html.
import { render } from "preact"
import "./console.css"
import { Shell } from "./Shell.tsx"

const root = document.getElementById("app")!
root.textContent = "" // the "Loading the console…" placeholder
render(<Shell />, root)
