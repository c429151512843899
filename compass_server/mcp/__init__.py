"""The MCP front door: Compass's MCP tools (`compass_mcp`) served at `/mcp` on the main port.

`http`: the gate, the SDK's stateless streamable HTTP transport, receipts, the protected
resource metadata and the leave sweep; `backend`: the tools' backend, one agent account's
calls of the application API (`service/asks.py`). Above `service` in the layers; it never
reaches the store.
"""
