#!/usr/bin/env bash
# The package as users install it: `npm pack`, then `npm install -g <tarball> --omit=dev` into a
# temporary prefix, then the installed `switchyard` runs: `start` answers /readyz and runs the
# demo workflow synchronously, `start` beside `worker` runs it through the worker (Redis), and the
# CLI tests of the suite run against it until every verb of its help has run
# (test/package/mocharc.cjs). Needs Node 22 or later, Redis on 127.0.0.1:6379 and this
# checkout's `npm ci`.
#
# sqlite3's native addon: its install script fetches a prebuilt binary from GitHub, else compiles
# SQLite (about a minute and a half). These machines reach no GitHub, so the binary this checkout
# built (N-API: the same file serves every supported Node) is handed over as a local prebuild
# (npm_config_sqlite3_local_prebuilds, prebuild-install's offline option), which is also how an
# air-gapped install can skip the compiler.
set -euo pipefail
trap 'echo "package-check: failed (exit $?) at line $LINENO: $BASH_COMMAND" >&2' ERR
cd "$(dirname "$0")/.."
root=$(pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

npm pack --silent --pack-destination "$work" >/dev/null
tarball=$(ls "$work"/switchyard-*.tgz)
echo "package-check: packed $(basename "$tarball") ($(du -k "$tarball" | cut -f1) KiB, $(tar tzf "$tarball" | wc -l) files)"

sqlite_version=$(node -p 'require("./node_modules/sqlite3/package.json").version')
if [ -f node_modules/sqlite3/build/Release/node_sqlite3.node ]; then
  mkdir -p "$work/prebuilds"
  tar -C node_modules/sqlite3 -czf "$work/prebuilds/sqlite3-v$sqlite_version-napi-v6-linux-x64.tar.gz" build/Release/node_sqlite3.node
  export npm_config_sqlite3_local_prebuilds="$work/prebuilds"
fi

prefix=$work/prefix
# The dependencies come from the npm cache that the checkout's `npm ci` filled where it can; a
# failed install (the registry out of reach for a moment) is tried once more, and says so.
install() {
  npm install --global --prefix "$prefix" --omit=dev --no-audit --no-fund --prefer-offline --loglevel=error "$tarball"
}
if ! install; then
  echo "package-check: npm install of the tarball failed; trying once more" >&2
  rm -rf "$prefix"
  install
fi
installed=$prefix/lib/node_modules/switchyard
echo "package-check: installed into $prefix ($(ls "$installed/node_modules" | wc -l) top-level packages)"

# Production dependencies only: no development-only package came along (tsx, TypeScript, esbuild,
# the test tools; a development dependency that a production one also needs, such as express for
# the MCP SDK, may be there), and no TypeScript runs.
prod=$(npm ls --omit=dev --all --parseable 2>/dev/null | sed -n 's|.*/node_modules/||p' | sort -u)
for dev in $(node -p 'Object.keys(require("./package.json").devDependencies).join(" ")'); do
  if ! grep -qx "$dev" <<<"$prod" && [ -e "$installed/node_modules/$dev" ]; then
    echo "package-check: the development dependency $dev was installed" >&2
    exit 1
  fi
done
for tool in tsx typescript esbuild mocha; do
  if [ -e "$installed/node_modules/$tool" ]; then
    echo "package-check: $tool was installed" >&2
    exit 1
  fi
done
if find "$installed" -path "$installed/node_modules" -prune -o -name '*.ts' -print | grep -q .; then
  echo "package-check: the package holds TypeScript sources" >&2
  exit 1
fi

export SWITCHYARD_CLI=$prefix/bin/switchyard
export SWITCHYARD_CLI_VERBS=$work/verbs.jsonl
: > "$SWITCHYARD_CLI_VERBS"
cd "$root"
npx mocha --config test/package/mocharc.cjs
