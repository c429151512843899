"""oh-my-pi's JSON-lines RPC mode (`agent-bridge --protocol rpc`)."""
