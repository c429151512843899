"""Claude Code's own hooks (`compass claude-hook`)."""
