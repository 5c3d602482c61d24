#!/usr/bin/env bash
# make bench: the benchmarks of issue #11. Builds what they need, starts a private
# PostgreSQL, runs the bench program (bench/) and stops PostgreSQL at the end. The
# results table is printed and written to bench/RESULTS.md. Arguments go to the bench
# program, e.g. `scripts/bench.sh -only sweep` runs one benchmark (and writes no file).
#
# The measurements run in a private network namespace whose only interface is loopback
# (`unshare --net`, when the user may create one): nothing can leave 127.0.0.0/8 and the
# system resolver cannot be asked. PostgreSQL runs inside it too.
set -euo pipefail
cd "$(dirname "$0")/.."
step() { printf '\n== %s\n' "$*"; }
pgdir=.data/bench-pg

step "Debian packages: Chromium (benchmark 7 loads a page in it) and what the cluster binaries' build checks for (scripts/packages.sh)"
scripts/packages.sh

step "build bin/runr, bin/bench and the simulated cluster binaries (cached after the first time)"
go build -ldflags "-X main.version=$(git describe --tags --always --dirty 2>/dev/null || echo dev)" -o bin/runr .
go build -o bin/bench ./bench
go run ./testcluster/cmd/sandbox build

# A server left by an interrupted run may live in another network namespace: stop it.
scripts/pg.sh stop "$pgdir" 2>/dev/null || true

# inner runs in the namespace: loopback up, PostgreSQL, the bench, PostgreSQL stopped.
inner() {
  if [ "${BENCH_NETNS:-}" = 1 ]; then ip link set lo up; fi
  local url
  url=$(PG_FAST=1 scripts/pg.sh start "$pgdir" postgres)
  trap 'scripts/pg.sh stop "$pgdir"' EXIT
  step "benchmarks"
  bin/bench -pg "$url" -pg-dir "$(pwd)/$pgdir" "$@"
}
export -f inner step
export pgdir

if [ "${BENCH_NETNS:-1}" != 0 ] && unshare --net true 2>/dev/null; then
  BENCH_NETNS=1 unshare --net bash -c 'inner "$@"' bench "$@"
else
  echo "bench.sh: cannot create a network namespace (not root?): running on the host's network, loopback addresses only" >&2
  BENCH_NETNS=0 bash -c 'inner "$@"' bench "$@"
fi
