-- Compass schema, version 7: the MCP front door's asks (issue 23).
-- `mcp_asks` names each ask an `ask` tool call created by the identity of the call's
-- arguments (`call_key`), so an identical call re-issued while the ask is still to be
-- delivered rejoins it. `mcp_waiters` holds one row per tool call waiting for an ask, renewed
-- while it waits: a call whose client went away keeps its row for the grace period; a
-- pending ask whose rows all ran out is WITHDRAWN ("agent stopped waiting") by the sweep.
-- Forward-only: never edit this file once applied (the runner records its checksum).

CREATE TABLE mcp_asks (
    ask_id     text        PRIMARY KEY REFERENCES asks (ask_id),
    channel_id text        NOT NULL REFERENCES channels (channel_id),
    account_id text        NOT NULL REFERENCES accounts (account_id),
    call_key   text        NOT NULL CONSTRAINT mcp_asks_call_key_check CHECK (char_length(call_key) = 64),
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX mcp_asks_call_key_idx ON mcp_asks (account_id, channel_id, call_key, created_at DESC);

CREATE TABLE mcp_waiters (
    ask_id     text        NOT NULL REFERENCES mcp_asks (ask_id),
    waiter_id  text        NOT NULL CONSTRAINT mcp_waiters_waiter_id_check CHECK (char_length(waiter_id) BETWEEN 1 AND 64),
    expires_at timestamptz NOT NULL,
    PRIMARY KEY (ask_id, waiter_id)
);
CREATE INDEX mcp_waiters_expires_at_idx ON mcp_waiters (expires_at);
