"""Observability: metrics, the access log, traces."""
