"""OpenCode's own `question` tool answered in Compass: a plugin OpenCode loads
(plugin/compass.js, put into its config by `compass opencode install`) runs `compass opencode
ask` for each question."""
