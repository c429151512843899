"""The one failure of the command line a user can act on (its message says how)."""

from __future__ import annotations


class CliError(Exception):
    """A command failed in a way the user can act on; the message says how."""
