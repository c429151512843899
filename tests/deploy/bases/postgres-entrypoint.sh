#!/bin/sh
# The entrypoint of compass-base/postgres (postgres.Dockerfile): on the first start, an empty
# PGDATA gets a cluster whose superuser is POSTGRES_USER (password POSTGRES_PASSWORD, required)
# with the database POSTGRES_DB, reachable over TCP with that password; then the command runs.
# Like the upstream image, `docker run IMAGE -c name=value` means `postgres -c name=value`.
set -eu
if [ "${1#-}" != "$1" ]; then
  set -- postgres "$@"
fi
if [ "$1" = postgres ] && [ ! -s "$PGDATA/PG_VERSION" ]; then
  user="${POSTGRES_USER:-postgres}"
  database="${POSTGRES_DB:-$user}"
  if [ -z "${POSTGRES_PASSWORD:-}" ]; then
    echo "docker-entrypoint.sh: set POSTGRES_PASSWORD (the superuser's password)" >&2
    exit 1
  fi
  pwfile="$(mktemp)"
  printf '%s\n' "$POSTGRES_PASSWORD" > "$pwfile"
  initdb --pgdata="$PGDATA" --username="$user" --pwfile="$pwfile" --encoding=UTF8 \
    --locale=C.UTF-8 --auth-local=trust --auth-host=scram-sha-256 >/dev/null
  rm -f "$pwfile"
  echo "listen_addresses = '*'" >> "$PGDATA/postgresql.conf"
  echo "host all all all scram-sha-256" >> "$PGDATA/pg_hba.conf"
  if [ "$database" != postgres ]; then
    # A server on the unix socket only, so nobody connects over TCP before the database exists.
    pg_ctl --pgdata="$PGDATA" --options="-c listen_addresses=''" --wait --silent start
    # psql quotes the name (:"db"); it interpolates variables only in what it reads, not -c.
    echo 'CREATE DATABASE :"db"' | psql --no-psqlrc --quiet --set=ON_ERROR_STOP=1 \
      --username="$user" --dbname=postgres --set=db="$database"
    pg_ctl --pgdata="$PGDATA" --mode=fast --wait --silent stop
  fi
  echo "docker-entrypoint.sh: initialised $PGDATA (superuser $user, database $database)" >&2
fi
exec "$@"
