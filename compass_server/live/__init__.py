"""The live-watch machinery: the change hub, shared reads, token revocation."""
