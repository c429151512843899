"""Email (docs/answering/email.md): the sender (`sender.py`), the inbound SMTP listener
(`inbound.py`) and the one-click unsubscribe endpoint (`unsubscribe.py`)."""
