# compass-base/postgres: PostgreSQL 15 from Debian bookworm, the local stand-in for the
# upstream postgres image (scripts/test-containers builds it where no image registry answers).
# It keeps the part of the upstream image's interface that testcontainers, docker-compose.yml
# and tests/deploy use: POSTGRES_USER / POSTGRES_PASSWORD / POSTGRES_DB on first start, data in
# PGDATA (a volume may be mounted there), PGPORT, `postgres -c ...` as the command, pg_isready
# and psql on PATH. It runs as the postgres user from the start (upstream starts as root and
# steps down), so a named volume gets that user's ownership from the image's PGDATA.
ARG DEBIAN_IMAGE=compass-base/debian:bookworm
FROM ${DEBIAN_IMAGE}
RUN apt-get update \
 && apt-get -y upgrade \
 && apt-get install -y postgresql-common \
 && sed -i 's/^#\?\s*create_main_cluster.*/create_main_cluster = false/' \
      /etc/postgresql-common/createcluster.conf \
 && apt-get install -y postgresql-15 \
 && rm -rf /var/lib/apt/lists/*
ENV PATH=/usr/lib/postgresql/15/bin:$PATH \
    PGDATA=/var/lib/postgresql/data \
    LANG=C.UTF-8
RUN mkdir -p "$PGDATA" /var/run/postgresql \
 && chown -R postgres:postgres /var/lib/postgresql /var/run/postgresql \
 && chmod 700 "$PGDATA"
COPY postgres-entrypoint.sh /usr/local/bin/docker-entrypoint.sh
USER postgres
ENTRYPOINT ["docker-entrypoint.sh"]
STOPSIGNAL SIGINT
EXPOSE 5432
CMD ["postgres"]
