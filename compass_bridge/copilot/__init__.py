"""GitHub Copilot CLI, run headless under its SDK's JSON-RPC (`agent-bridge --protocol copilot`)."""
