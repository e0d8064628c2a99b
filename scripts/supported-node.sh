#!/usr/bin/env bash
# Runs a command under a supported Node (22 or 24):
#
#   bash scripts/supported-node.sh <command> [args...]
#
# On Node 22 or later it simply runs the command. On an older Node (Node 20, past its end of
# life, is what these machines come with) it runs it under Node ${SWITCHYARD_NODE_VERSION:-24.21.0}
# from the npm registry instead, through scripts/with-node.sh: in a copy of this checkout that
# reuses its node_modules (WITH_NODE_REUSE_MODULES=1), with
# DATA_DIR still pointing at this checkout's ./data unless it is set. `npm start`, `npm run worker`
# and `npm test` go through here, so the README's two commands work on such a machine too.
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: scripts/supported-node.sh <command> [args...]" >&2; exit 2; }

major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$major" -ge 22 ]; then exec "$@"; fi

root=$(cd "$(dirname "$0")/.." && pwd)
version=${SWITCHYARD_NODE_VERSION:-24.21.0}
echo "switchyard: Node $(node -v) is not supported (Node 22 or 24 is); running '$*' under Node $version from the npm registry (scripts/supported-node.sh)" >&2
# Relative paths of the caller are kept meaningful in the copy.
export DATA_DIR="$(cd "$root" && realpath -m "${DATA_DIR:-data}")"
export WITH_NODE_REUSE_MODULES=1
exec bash "$root/scripts/with-node.sh" "$version" "$@"
