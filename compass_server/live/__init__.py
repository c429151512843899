"""The live-watch machinery: the change feed and hub, shared reads, token revocation."""
