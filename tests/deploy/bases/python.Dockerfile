# compass-base/python: Python 3.11 from Debian bookworm, the local stand-in for
# python:3.11-slim as the project Dockerfile's PYTHON_IMAGE (scripts/test-containers builds it
# where no image registry answers). What the Dockerfile needs of its base: `python` (3.11) with
# venv, pip for `pip wheel`, groupadd/useradd, CA certificates for PyPI.
#
# The build context's extra-ca/ holds the CA certificates the building machine trusts beyond
# Debian's (its /usr/local/share/ca-certificates: e.g. a TLS-inspecting egress proxy's), so pip
# inside `docker build` reaches PyPI wherever the machine itself does. Often empty.
ARG DEBIAN_IMAGE=compass-base/debian:bookworm
FROM ${DEBIAN_IMAGE}
COPY extra-ca/ /usr/local/share/ca-certificates/
RUN apt-get update \
 && apt-get -y upgrade \
 && apt-get install -y python3 python3-venv python3-pip python-is-python3 ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && python -c "import sys; assert sys.version_info[:2] == (3, 11), sys.version"
ENV LANG=C.UTF-8
CMD ["python"]
