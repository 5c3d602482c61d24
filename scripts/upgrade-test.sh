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
# v0.1.0 is this commit; a clone made without tags still has it in its history.
first_release=0bbca244801b2f0b721856be5305e5baa27eb169
if [ -z "${RUNR_UPGRADE_FROM:-}" ] && ! git tag -l 'v*' | grep -q .; then
  if git cat-file -e "$first_release^{commit}" 2>/dev/null; then
    echo "upgrade-test: no release tag in this clone; upgrading from v0.1.0's commit $first_release" >&2
    export RUNR_UPGRADE_FROM=$first_release
  else
    echo "upgrade-test: no release tag (vX.Y.Z) to upgrade from: git fetch --tags" >&2
    exit 1
  fi
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
