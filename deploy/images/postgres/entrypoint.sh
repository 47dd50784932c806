#!/bin/sh
# First start on an empty PGDATA: a cluster whose superuser is POSTGRES_USER, every connection
# trusted (a test image), and POSTGRES_DB created. Then PostgreSQL as PID 1, listening on *.
set -eu
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  user=${POSTGRES_USER:-postgres}
  db=${POSTGRES_DB:-$user}
  initdb -D "$PGDATA" -U "$user" -A trust -E UTF8 --no-locale >/dev/null
  printf '%s\n' 'host all all 0.0.0.0/0 trust' 'host all all ::/0 trust' >> "$PGDATA/pg_hba.conf"
  if [ "$db" != postgres ]; then
    echo "CREATE DATABASE \"$db\"" | postgres --single -D "$PGDATA" -j postgres >/dev/null
  fi
  echo "postgres-entrypoint: initialised $PGDATA (user $user, database $db, trust authentication)"
fi
exec postgres -D "$PGDATA" -c listen_addresses='*' "$@"
