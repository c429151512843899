-- Compass schema, version 8: whether an MCP ask's agent is waiting for it now (issue 33, N7).
-- A waiting tool call's row in `mcp_waiters` has `left_at` NULL and is renewed while the call
-- waits; once the call returned `pending` or its client went away, `left_at` says when, and
-- the row counts only for the grace period (`expires_at`). A pending MCP ask none of whose
-- rows is a call still waiting is one its agent is not waiting for: reads give people when it
-- will be withdrawn (Ask.withdraw_at) unless the agent comes back.
-- Forward-only: never edit this file once applied (the runner records its checksum).

ALTER TABLE mcp_waiters ADD COLUMN left_at timestamptz;
