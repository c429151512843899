"""Compass's MCP tools (`ask`, `ask_wait`, `ask_cancel`), shared by both transports.

`tools` (pure): the schemas, the arguments (the native ask schema, narrowed by
`compass_core.build_ask`) and the results; `calls`: what a call does over a `Backend`;
`server`: the `mcp` SDK Server listing and dispatching them. `compass serve` serves them at
`/mcp` over a store backend (`compass_server.mcp`), `compass mcp` over stdio with an
AgentService client (`compass_bridge.mcp`).

Layering: never `compass_server` nor `compass_bridge` (import-linter contract).
"""
