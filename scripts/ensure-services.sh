#!/usr/bin/env bash
# Finds PostgreSQL (127.0.0.1:5432, trust auth, database `test`) and Redis (127.0.0.1:6379)
# running, or starts them; installs them from Debian's packages when they are missing. Installs
# Chromium (for the browser automation tests), bubblewrap (the operating-system layer of code
# isolation, src/containment) and promtool (Debian's prometheus, for the metrics test) the same way.
set -euo pipefail

have_pg() { pg_isready -h 127.0.0.1 -p 5432 -q 2>/dev/null; }
have_redis() { redis-cli -h 127.0.0.1 -p 6379 ping 2>/dev/null | grep -q PONG; }

if ! command -v pg_ctlcluster >/dev/null 2>&1 || ! command -v redis-server >/dev/null 2>&1; then
  echo "ensure-services: installing postgresql and redis-server from Debian's packages"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql redis-server >/dev/null
fi

if ! have_pg; then
  echo "ensure-services: starting PostgreSQL"
  pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -n1)" main start || true
  for _ in $(seq 1 30); do have_pg && break; sleep 1; done
fi
have_pg || { echo "ensure-services: PostgreSQL is not reachable on 127.0.0.1:5432" >&2; exit 1; }
# trust auth and a `test` database, as on the development machines
psql -h 127.0.0.1 -U postgres -tAc "select 1 from pg_database where datname='test'" 2>/dev/null | grep -q 1 \
  || su postgres -c "psql -tAc 'create database test'" >/dev/null 2>&1 \
  || psql -h 127.0.0.1 -U postgres -c 'create database test' >/dev/null

if ! have_redis; then
  echo "ensure-services: starting Redis"
  mkdir -p /var/lib/redis /var/log/redis
  redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no --dir /var/lib/redis --logfile /var/log/redis/ci.log
  for _ in $(seq 1 30); do have_redis && break; sleep 1; done
fi
have_redis || { echo "ensure-services: Redis is not reachable on 127.0.0.1:6379" >&2; exit 1; }
echo "ensure-services: PostgreSQL and Redis are running"

# Browser automation (src/browser) drives Debian's Chromium; its tests need it (DESIGN.md section 6).
if [ ! -x "${BROWSER_EXECUTABLE:-/usr/bin/chromium}" ]; then
  echo "ensure-services: installing chromium from Debian's packages"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
fi
"${BROWSER_EXECUTABLE:-/usr/bin/chromium}" --version || { echo "ensure-services: Chromium does not run" >&2; exit 1; }

# Tenant code runs in bubblewrap's namespaces (CODE_ISOLATION=auto uses it when present; CI runs strict).
if ! command -v bwrap >/dev/null 2>&1; then
  echo "ensure-services: installing bubblewrap from Debian's packages"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap >/dev/null
fi
bwrap --version || { echo "ensure-services: bubblewrap does not run" >&2; exit 1; }

# The metrics test lints a scrape with `promtool check metrics` (README "Metrics"); Debian ships it in prometheus.
if ! command -v promtool >/dev/null 2>&1; then
  echo "ensure-services: installing prometheus (promtool) from Debian's packages"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus >/dev/null
fi
promtool --version >/dev/null || { echo "ensure-services: promtool does not run" >&2; exit 1; }
