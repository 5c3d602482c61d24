#!/usr/bin/env bash
# make run: the console against a private PostgreSQL under .data/ (or DATABASE_URL).
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .data
private=""
if [ -z "${DATABASE_URL:-}" ]; then
  DATABASE_URL=$(scripts/pg.sh start .data/pg runr)
  private=1
fi
if [ -z "${RUNR_APP_KEY:-}" ]; then
  if [ ! -s .data/app.key ]; then
    (umask 077; head -c 32 /dev/urandom | base64 > .data/app.key)
    echo "run.sh: created .data/app.key (keep it: it encrypts the secrets in the database)" >&2
  fi
  RUNR_APP_KEY=$(cat .data/app.key)
fi
export DATABASE_URL RUNR_APP_KEY
if [ -n "$private" ]; then
  (umask 077; printf 'DATABASE_URL=%s\nRUNR_APP_KEY=%s\n' "$DATABASE_URL" "$RUNR_APP_KEY" > .data/env)
  echo "run.sh: wrote .data/env; \`set -a; . .data/env\` lets every runr subcommand use this database" >&2
fi
# The agents of the regions reach the console at its public URL: without one the console
# refuses to install them. Default: the address this console serves on.
if [ -z "${RUNR_APP_URL:-}" ] && [ -z "${RUNR_AGENT_WS_URL:-}" ]; then
  addr=${RUNR_ADDR:-:8080}
  host=${addr%:*}
  case "$host" in ""|0.0.0.0|"[::]") host=127.0.0.1 ;; esac
  RUNR_APP_URL="http://${host}:${addr##*:}"
  export RUNR_APP_URL
  echo "run.sh: RUNR_APP_URL=$RUNR_APP_URL (the agents' address; set it to an address your clusters reach)" >&2
fi
bin/runr migrate
bin/runr user bootstrap
echo "run.sh: serving on ${RUNR_ADDR:-:8080}" >&2
exec bin/runr serve
