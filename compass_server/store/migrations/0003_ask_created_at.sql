-- Compass schema, version 3: when each ask was first stored, for the "waiting on you" inbox
-- (ListPendingAsks: pending asks of the caller's channels, oldest first). An ask can join its
-- message later (an UpdateMessage adding an ask block), so the message's created_at is not it.
-- Forward-only: never edit this file once applied (the runner records its checksum).

ALTER TABLE asks ADD COLUMN created_at timestamptz NOT NULL DEFAULT now();

-- Asks stored before this version: their message's creation is the best time we have.
UPDATE asks SET created_at = m.created_at FROM messages m WHERE m.message_id = asks.message_id;

-- The inbox's scan: pending asks by age (keyset pagination on created_at, ask_id).
CREATE INDEX asks_pending_created_idx ON asks (created_at, ask_id) WHERE status = 'pending';
