"""The MCP front door: Compass's MCP tools (`compass_mcp`) served at `/mcp` on the main port.

`http`: the gate, the SDK's stateless streamable HTTP transport, receipts, the protected
resource metadata and the leave sweep; `backend`: the tools' backend on the store and the
AgentService handlers. A peer of `service` in the layers (it calls the handlers).
"""
