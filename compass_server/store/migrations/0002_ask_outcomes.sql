-- Compass schema, version 2: every ask ends with a typed outcome (design record, resolved
-- decision 11; docs/ask-outcomes.md). The `asks` row stays the single source of truth: its
-- status, the agent's deadline and timeout policy, and who closed it without an answer.
-- Forward-only: never edit this file once applied (the runner records its checksum).

ALTER TABLE asks
    ADD COLUMN status               text        NOT NULL DEFAULT 'pending',
    ADD COLUMN deadline             timestamptz,
    ADD COLUMN on_timeout           text        NOT NULL DEFAULT 'unspecified',
    ADD COLUMN closed_by_account_id text        REFERENCES accounts (account_id),
    ADD COLUMN closed_at            timestamptz,
    ADD COLUMN close_reason         text        NOT NULL DEFAULT '';

-- Asks answered before this version keep their answer: they are ANSWERED.
UPDATE asks SET status = 'answered' WHERE answers IS NOT NULL;

ALTER TABLE asks
    ADD CONSTRAINT asks_status_check CHECK (
        status IN ('pending', 'answered', 'declined', 'withdrawn', 'timed_out', 'expired')
    ),
    ADD CONSTRAINT asks_on_timeout_check CHECK (
        on_timeout IN ('unspecified', 'pick_recommended', 'fail')
    ),
    ADD CONSTRAINT asks_close_reason_check CHECK (char_length(close_reason) <= 500),
    -- Which columns each status sets (answers/answered_* move together: asks_answer_state_check).
    ADD CONSTRAINT asks_outcome_check CHECK (
        CASE status
            WHEN 'pending' THEN
                answers IS NULL AND closed_by_account_id IS NULL AND closed_at IS NULL
                AND close_reason = ''
            WHEN 'answered' THEN
                answers IS NOT NULL AND answered_by_account_id IS NOT NULL
                AND closed_by_account_id IS NULL AND closed_at IS NULL AND close_reason = ''
            -- The runtime's auto-answer, recorded by the asking agent: it is who answered.
            WHEN 'timed_out' THEN
                answers IS NOT NULL AND closed_by_account_id IS NOT NULL AND closed_at IS NOT NULL
                AND answered_by_account_id = closed_by_account_id
            WHEN 'expired' THEN
                answers IS NULL AND closed_by_account_id IS NULL AND closed_at IS NOT NULL
            ELSE -- declined, withdrawn
                answers IS NULL AND closed_by_account_id IS NOT NULL AND closed_at IS NOT NULL
        END
    );

-- The sweeper's scan: pending asks with a deadline, soonest first.
CREATE INDEX asks_pending_deadline_idx ON asks (deadline)
    WHERE status = 'pending' AND deadline IS NOT NULL;
