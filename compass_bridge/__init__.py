"""Compass's agent side: what runs beside an agent, an AgentService client (never the server).

One folder or module per agent integration, each sharing only this package's top-level
modules (import-linter's `independence` contract): `omp/` (oh-my-pi's RPC mode), `acp/` (any
ACP agent), `claude/` (Claude Code's own hooks), `mcp_stdio` (the MCP tools over stdio).
Shared: `cli` (the agent commands; `register` adds them to compass's parser), `client`
(AgentService, its errors and its retry), `asks` (one ask's life: post, follow, withdraw,
report), `poster` and `bridge_core` (what both bridges share), `process` (running beside an
agent process), `replies`, `receipts`, `forms`, `companions`, `held`, `startup`.
"""

from __future__ import annotations

from compass_bridge.cli import register

__all__ = ["register"]
