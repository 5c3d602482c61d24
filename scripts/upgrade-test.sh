#!/usr/bin/env bash
# make upgrade-test: the previous release tag (vX.Y.Z before HEAD, or RUNR_UPGRADE_FROM)
# creates data through its API on a simulated cluster; this checkout migrates and takes
# over while a prober calls the API every 100 ms (upgradetest/). Reuses the PostgreSQL of
# `make test` (RUNR_TEST_DATABASE_URL) or starts its own. Its last line reports the
# switch-over window.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ -z "${RUNR_TEST_DATABASE_URL:-}" ]; then
  RUNR_TEST_DATABASE_URL=$(PG_FAST=1 scripts/pg.sh start .data/upgrade-pg postgres)
  export RUNR_TEST_DATABASE_URL
  trap 'scripts/pg.sh stop .data/upgrade-pg' EXIT
  go run ./testcluster/cmd/sandbox build
fi
if [ -z "${RUNR_UPGRADE_FROM:-}" ] && ! git tag -l 'v*' | grep -q .; then
  echo "upgrade-test: no release tag (vX.Y.Z) to upgrade from: git fetch --tags" >&2
  exit 1
fi
log=$(mktemp)
status=0
RUNR_UPGRADE_TEST=1 go test -count=1 -v -timeout 20m ./upgradetest >"$log" 2>&1 || status=$?
if [ "$status" -ne 0 ]; then
  cat "$log"
else
  grep -E 'built|switch-over window|rows of|^ok' "$log" | sed 's/^ *//'
fi
rm -f "$log"
exit "$status"
