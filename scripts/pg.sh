#!/usr/bin/env bash
# Starts (or reuses) a private PostgreSQL under a data directory and prints its
# DATABASE_URL on stdout. Installs Debian's postgresql package when its binaries are missing.
#   scripts/pg.sh start DIR [DBNAME]   start the server (idempotent), create DBNAME, print its URL
#   scripts/pg.sh stop DIR             stop it
set -euo pipefail
cmd=${1:?usage: pg.sh start|stop DIR [DBNAME]}
dir=$(mkdir -p "${2:?data dir}" && cd "$2" && pwd)
db=${3:-runr}

log() { echo "pg.sh: $*" >&2; }

bindir() {
  local d
  d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
  if [ -z "$d" ] || [ ! -x "$d/initdb" ]; then
    log "PostgreSQL binaries are missing: installing Debian's postgresql package"
    local sudo=""; [ "$(id -u)" -ne 0 ] && sudo="sudo"
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >&2
    d=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
  fi
  echo "$d"
}

# as runs a command as the owner of the data (initdb and postgres refuse root).
as() {
  if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

free_port() {
  local p
  for p in $(shuf -i 20000-40000 -n 200); do
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then echo "$p"; return; fi
  done
  log "no free port found"; exit 1
}

bin=$(bindir)
pgdata="$dir/data"

case "$cmd" in
start)
  if [ "$(id -u)" -eq 0 ]; then
    id postgres >/dev/null 2>&1 || useradd --system --no-create-home postgres
    chown postgres "$dir"
  fi
  if [ ! -f "$pgdata/PG_VERSION" ]; then
    log "initdb $pgdata"
    as mkdir -p "$pgdata"
    as "$bin/initdb" -D "$pgdata" -U runr --auth=trust --encoding=UTF8 --no-locale >"$dir/initdb.log" 2>&1 \
      || { cat "$dir/initdb.log" >&2; exit 1; }
  fi
  if ! as "$bin/pg_ctl" -D "$pgdata" status >/dev/null 2>&1; then
    port=$(free_port)
    echo "$port" | as tee "$dir/port" >/dev/null
    log "starting PostgreSQL on 127.0.0.1:$port"
    opts="-p $port -c listen_addresses=127.0.0.1 -c unix_socket_directories='' -c max_connections=500"
    # Tests trade durability for speed (PG_FAST=1); `make run` keeps the defaults.
    [ "${PG_FAST:-}" = 1 ] && opts="$opts -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
    as "$bin/pg_ctl" -D "$pgdata" -l "$dir/server.log" -w -t 60 -o "$opts" \
      start >&2 || { tail -n 30 "$dir/server.log" >&2; exit 1; }
  fi
  port=$(cat "$dir/port")
  if ! "$bin/psql" -h 127.0.0.1 -p "$port" -U runr -d postgres -tAc "SELECT 1 FROM pg_database WHERE datname = '$db'" | grep -q 1; then
    "$bin/createdb" -h 127.0.0.1 -p "$port" -U runr "$db"
  fi
  echo "postgres://runr@127.0.0.1:$port/$db?sslmode=disable"
  ;;
stop)
  if [ -f "$pgdata/PG_VERSION" ]; then as "$bin/pg_ctl" -D "$pgdata" -m fast stop >&2 || true; fi
  ;;
*) log "unknown command $cmd"; exit 2 ;;
esac
