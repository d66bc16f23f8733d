#!/usr/bin/env bash
# A throwaway PostgreSQL server on 127.0.0.1 for the distributed-tuning test.
#   postgres.sh start   prints its URL;   postgres.sh stop   stops it and removes its data.
set -euo pipefail
dir=/tmp/pool-tuning-pg
port=54329
bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
as_postgres() {  # the server refuses to run as root
  if [ "$(id -u)" = 0 ]; then su postgres -s /bin/sh -c "$1"; else sh -c "$1"; fi
}
case "${1:-start}" in
  start)
    [ -n "$bin" ] && [ -x "$bin/initdb" ] || { echo "PostgreSQL is not installed" >&2; exit 1; }
    rm -rf "$dir" && mkdir -p "$dir"
    if [ "$(id -u)" = 0 ]; then chown postgres "$dir"; fi
    as_postgres "$bin/initdb -D $dir/data -A trust -U postgres" >/dev/null
    as_postgres "$bin/pg_ctl -D $dir/data -l $dir/log -w -o '-p $port -k $dir -c listen_addresses=127.0.0.1' start" >/dev/null
    echo "postgresql://postgres@127.0.0.1:$port/postgres"
    ;;
  stop)
    as_postgres "$bin/pg_ctl -D $dir/data -m fast -w stop" >/dev/null 2>&1 || true
    rm -rf "$dir"
    ;;
esac
