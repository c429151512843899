"""Compass server: the Connect services, the PostgreSQL store and the CLI."""
