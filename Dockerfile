# The Compass server image. docker-compose.yml runs it beside PostgreSQL.
FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml README.md ./
COPY compass_server ./compass_server
COPY compass_agent ./compass_agent
COPY gen ./gen
COPY migrations ./migrations
RUN pip install --no-cache-dir -e . && useradd --system --home /app compass
USER compass
ENV COMPASS_HOST=0.0.0.0 COMPASS_PORT=8000
EXPOSE 8000
CMD ["compass", "serve"]
