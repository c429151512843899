-- Compass schema, version 6: delivery receipts (issue 22; docs/ask-outcomes.md, "Delivery
-- receipts"). After an ask is ANSWERED or DECLINED, the side that posted it reports what the
-- agent received (AgentService.ReportDelivery): delivered, delivered with changes, or not
-- delivered, with a detail for people and the payload it handed the agent. The `asks` row
-- stays the single source of truth; reads merge the receipt into the Ask. Asks stored before
-- this version have none (unset: not known to have reached the agent).
-- Forward-only: never edit this file once applied (the runner records its checksum).

ALTER TABLE asks
    ADD COLUMN delivery_state       text,
    ADD COLUMN delivery_detail      text,
    ADD COLUMN delivery_payload     text,
    ADD COLUMN delivery_reported_by text        REFERENCES accounts (account_id),
    ADD COLUMN delivery_reported_at timestamptz;

ALTER TABLE asks
    ADD CONSTRAINT asks_delivery_state_check CHECK (
        delivery_state IN ('delivered', 'delivered_with_changes', 'not_delivered')
    ),
    -- In characters, as the server's limits count them (compass_agent/limits.py).
    ADD CONSTRAINT asks_delivery_detail_check CHECK (char_length(delivery_detail) <= 1000),
    ADD CONSTRAINT asks_delivery_payload_check CHECK (char_length(delivery_payload) <= 65536),
    -- A receipt is whole or absent, and only an answer or a decline is delivered.
    ADD CONSTRAINT asks_delivery_check CHECK (
        (delivery_state IS NULL AND delivery_detail IS NULL AND delivery_payload IS NULL
         AND delivery_reported_by IS NULL AND delivery_reported_at IS NULL)
        OR (delivery_state IS NOT NULL AND delivery_detail IS NOT NULL
            AND delivery_payload IS NOT NULL AND delivery_reported_by IS NOT NULL
            AND delivery_reported_at IS NOT NULL AND status IN ('answered', 'declined'))
    );

-- Webhooks: `ask.not_delivered` when a receipt says the agent did not get the answer (or the
-- decline). Written to the outbox by a trigger, in the transaction of the receipt itself, as
-- every other ask event (0005_webhooks.sql).
ALTER TABLE webhooks
    DROP CONSTRAINT webhooks_events_check,
    ADD CONSTRAINT webhooks_events_check CHECK (
        cardinality(events) > 0
        AND events <@ ARRAY['ask.created', 'ask.answered', 'ask.closed', 'ask.reminder',
                            'ask.not_delivered']
    );

CREATE FUNCTION compass_ask_not_delivered_trigger() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM compass_enqueue_webhooks(NEW, 'ask.not_delivered');
    RETURN NULL;
END;
$$;

CREATE TRIGGER asks_webhook_not_delivered AFTER UPDATE OF delivery_state ON asks
    FOR EACH ROW WHEN (OLD.delivery_state IS NULL AND NEW.delivery_state = 'not_delivered')
    EXECUTE FUNCTION compass_ask_not_delivered_trigger();
