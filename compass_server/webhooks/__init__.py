"""Outgoing webhooks: the first notifier (docs/webhooks.md)."""
