#!/usr/bin/env bash
# make test: everything CI runs. Installs and starts what the tests need: PostgreSQL,
# Chromium, the simulated clusters' binaries (built once into the user cache dir).
set -euo pipefail
cd "$(dirname "$0")/.."
step() { printf '\n== %s\n' "$*"; }

step "go vet"
go vet ./...

step "regenerate templ and CSS, fail on a diff"
make --no-print-directory check-generated

step "PostgreSQL"
RUNR_TEST_DATABASE_URL=$(PG_FAST=1 scripts/pg.sh start .data/test-pg postgres)
export RUNR_TEST_DATABASE_URL
trap 'scripts/pg.sh stop .data/test-pg' EXIT

step "Debian packages: Chromium (browser tests), bzip2 (gVisor's release archives), a real node's containerd, runc, CNI plugins and iptables (realnode.md), curl and redis-tools for the images of the in-cluster scripts, python3 for the demo projects' image"
scripts/packages.sh
chromium --version

step "cluster binaries (simulated and real nodes) and SeaweedFS (about 30 minutes the first time, cached afterwards); make test-real: Traefik and Knative too"
go run ./testcluster/cmd/sandbox build ${RUNR_TEST_REAL:+--data-path}

step "tests"
mkdir -p "${ARTIFACTS:-test-artifacts}"
# This run's clusters live under their own temporary directory, so that the check below
# sees only them, even while another `make test` runs on the machine.
run_tmp=$(mktemp -d -t runr-test-XXXXXX)
TMPDIR=$run_tmp go test -count=1 -timeout 75m -p 3 ./...

step "upgrade path (make upgrade-test): the previous release tag, then this checkout under a prober"
TMPDIR=$run_tmp scripts/upgrade-test.sh

step "fuzz briefly (the committed corpus already ran with the tests above)"
# A count budget, not a duration: Go 1.26's fuzz coordinator can report its own
# -fuzztime deadline as a failure (go.dev/issue/75804, fixed in Go 1.27), as one CI run did.
for target in kube:FuzzParseKubeconfig kube:FuzzCheckAddress handlers:FuzzBodyDecoders handlers/lifecycle:FuzzUnsealStep1 imagemirror:FuzzMapIsStable; do
  go test -run '^$' -fuzz "^${target#*:}\$" -fuzztime "${FUZZTIME:-4000x}" "./${target%%:*}/"
done

step "no stray processes"
if pgrep -f "$run_tmp/" >/dev/null; then
  echo "simulated cluster processes were left behind:" >&2
  pgrep -af "$run_tmp/" >&2
  exit 1
fi
rm -rf "$run_tmp"
echo "ok"
