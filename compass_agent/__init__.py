"""Compass agent side: maps the agent runtime's events into compass.v1 frames."""
