-- Compass schema, version 5: outgoing signed webhooks per workspace (Standard Webhooks), with
-- a durable outbox, a delivery log and reminders (issue 13; docs/webhooks.md).
--
-- The outbox is filled by triggers on `asks`, in the transaction of the change itself: a new
-- ask (ask.created) and an ask leaving PENDING (ask.answered, or ask.closed for declined,
-- withdrawn, timed_out and expired) insert one delivery per subscribed endpoint of the ask's
-- workspace, whatever code path made the change. A crash can neither lose nor invent an event.
-- Forward-only: never edit this file once applied (the runner records its checksum).

CREATE TABLE webhooks (
    webhook_id   text        PRIMARY KEY,
    workspace_id text        NOT NULL REFERENCES workspaces (workspace_id),
    url          text        NOT NULL CONSTRAINT webhooks_url_check CHECK (url ~ '^https?://'),
    -- The signing secret ("whsec_" + base64). Needed in clear to sign; never logged or listed.
    secret       text        NOT NULL CONSTRAINT webhooks_secret_check CHECK (secret LIKE 'whsec_%'),
    events       text[]      NOT NULL CONSTRAINT webhooks_events_check CHECK (
        cardinality(events) > 0
        AND events <@ ARRAY['ask.created', 'ask.answered', 'ask.closed', 'ask.reminder']
    ),
    created_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX webhooks_workspace_id_idx ON webhooks (workspace_id);

-- One row per (event, endpoint). `delivery_id` is the `webhook-id` header ("whmsg_...": not
-- "msg_", the prefix of Compass message ids): the same on every retry, so receivers can drop
-- duplicates. `payload` is the JSON body, fixed at the first
-- attempt (retries send the same bytes; text, not jsonb, which would reformat it);
-- `next_attempt_at` is also the claim lease of a delivery in flight.
CREATE TABLE webhook_deliveries (
    delivery_id     text        PRIMARY KEY,
    webhook_id      text        NOT NULL REFERENCES webhooks (webhook_id) ON DELETE CASCADE,
    event_type      text        NOT NULL,
    ask_id          text        NOT NULL REFERENCES asks (ask_id),
    occurred_at     timestamptz NOT NULL DEFAULT now(),
    payload         text,
    state           text        NOT NULL DEFAULT 'pending'
        CONSTRAINT webhook_deliveries_state_check CHECK (state IN ('pending', 'delivered', 'failed')),
    attempts        integer     NOT NULL DEFAULT 0,
    next_attempt_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX webhook_deliveries_due_idx ON webhook_deliveries (next_attempt_at)
    WHERE state = 'pending';
CREATE INDEX webhook_deliveries_webhook_idx ON webhook_deliveries (webhook_id, occurred_at);

-- The delivery log: one row per attempt (never the secret, the signature or a response body).
CREATE TABLE webhook_attempts (
    delivery_id text        NOT NULL REFERENCES webhook_deliveries (delivery_id) ON DELETE CASCADE,
    attempt     integer     NOT NULL,
    at          timestamptz NOT NULL DEFAULT now(),
    duration_ms integer     NOT NULL,
    outcome     text        NOT NULL,  -- "http 200", "http 500", "timeout", "connection failed"
    PRIMARY KEY (delivery_id, attempt)
);

-- Reminders sent for an ask still pending (ask.reminder), so a restart does not repeat them.
CREATE TABLE ask_reminders (
    ask_id  text        PRIMARY KEY REFERENCES asks (ask_id),
    sent    integer     NOT NULL,
    last_at timestamptz NOT NULL
);

CREATE FUNCTION compass_enqueue_webhooks(ask asks, kind text) RETURNS void
LANGUAGE sql AS $$
    INSERT INTO webhook_deliveries (delivery_id, webhook_id, event_type, ask_id)
    SELECT 'whmsg_' || replace(gen_random_uuid()::text, '-', ''), w.webhook_id, kind, ask.ask_id
    FROM webhooks w
    JOIN channels c ON c.workspace_id = w.workspace_id
    WHERE c.channel_id = ask.channel_id AND kind = ANY (w.events);
$$;

CREATE FUNCTION compass_ask_webhook_trigger() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        PERFORM compass_enqueue_webhooks(NEW, 'ask.created');
    ELSIF NEW.status = 'answered' THEN
        PERFORM compass_enqueue_webhooks(NEW, 'ask.answered');
    ELSE
        PERFORM compass_enqueue_webhooks(NEW, 'ask.closed');
    END IF;
    RETURN NULL;
END;
$$;

CREATE TRIGGER asks_webhook_created AFTER INSERT ON asks
    FOR EACH ROW EXECUTE FUNCTION compass_ask_webhook_trigger();
CREATE TRIGGER asks_webhook_final AFTER UPDATE OF status ON asks
    FOR EACH ROW WHEN (OLD.status = 'pending' AND NEW.status <> 'pending')
    EXECUTE FUNCTION compass_ask_webhook_trigger();
