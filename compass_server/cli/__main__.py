"""`python -m compass_server.cli`."""

from compass_server.cli import entry

entry()
