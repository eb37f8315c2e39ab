// Runs before `npm install` and `npm start` (package.json): on a Node.js older than 24 it stops with one line that
// says how to get Node 24, instead of a native-module build failure or a TypeScript syntax error further on.
// Written for any Node version: no syntax newer than the oldest Node a user may still have.
var major = Number(process.versions.node.split(".")[0])
if (!(major >= 24)) {
  process.stderr.write(
    "troupe needs Node.js 24 or newer (this is " +
      process.version +
      "): run `. scripts/ensure-node.sh` " +
      "(installs Node 24 into ~/.cache/troupe-node and puts it on PATH), then run npm again.\n"
  )
  process.exit(1)
}
