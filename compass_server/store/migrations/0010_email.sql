-- Compass schema, version 10: asks by email, answered by reply (docs/answering/email.md).
-- A person's address and whether they take asks by email (`accounts.email`,
-- `accounts.email_asks`), the email outbox (`email_deliveries`, claimed and retried by the same
-- statements as the webhooks' and the pushes': store/postgres/outbox.py), the one-time reply
-- tokens of `Reply-To: ask+<token>@<reply domain>` (`email_reply_tokens`, only their
-- SHA-256), the tokens of one-click unsubscribe links (`email_unsubscribe_tokens`, only their
-- SHA-256) and the Message-ID of each (ask, person) thread (`email_threads`).
--
-- The outbox is filled by a trigger on `asks`, in the transaction of the change itself: an ask
-- stored PENDING is mailed ('ask') to every participant of its channel with an address and
-- email asks on, but the one who asked. The worker mails it only once it has waited
-- COMPASS_EMAIL_DELAY_SECONDS, and only if it is still pending then. The replies Compass sends
-- to a person's reply ('not_understood', 'ended') are queued here by the email use cases.
-- Forward-only: never edit this file once applied (the runner records its checksum).

ALTER TABLE accounts
    ADD COLUMN email text CONSTRAINT accounts_email_check CHECK (
        email IS NULL OR (char_length(email) <= 254 AND email ~ '^[^@[:space:]]+@[^@[:space:]]+$')
    ),
    ADD COLUMN email_asks boolean NOT NULL DEFAULT true;

-- One row per (mail, person), of the notifiers' common shape: `next_attempt_at` is also the
-- claim lease of a mail in flight. `payload` holds what a reply mail answers (JSON: the
-- problems found, the Message-ID and References of the person's mail); NULL for an ask.
CREATE TABLE email_deliveries (
    delivery_id     text        PRIMARY KEY,
    account_id      text        NOT NULL REFERENCES accounts (account_id) ON DELETE CASCADE,
    event_type      text        NOT NULL CONSTRAINT email_deliveries_event_type_check CHECK (
        event_type IN ('ask', 'not_understood', 'ended')
    ),
    ask_id          text        NOT NULL REFERENCES asks (ask_id),
    occurred_at     timestamptz NOT NULL DEFAULT now(),
    payload         text,
    state           text        NOT NULL DEFAULT 'pending'
        CONSTRAINT email_deliveries_state_check CHECK (state IN ('pending', 'delivered', 'failed')),
    attempts        integer     NOT NULL DEFAULT 0,
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    last_outcome    text        NOT NULL DEFAULT '' CONSTRAINT email_deliveries_last_outcome_check CHECK (char_length(last_outcome) <= 300)
);
CREATE INDEX email_deliveries_due_idx ON email_deliveries (next_attempt_at) WHERE state = 'pending';
CREATE INDEX email_deliveries_account_idx ON email_deliveries (account_id, next_attempt_at)
    WHERE state = 'pending';
CREATE INDEX email_deliveries_ask_idx ON email_deliveries (ask_id, account_id);

-- A reply address's token, bound to (ask, person): every mail of the thread carries a fresh
-- one (a retried send, a "not understood" reply), and storing an answer or a decline from
-- that person spends them all (`used_at`); revoke-sessions voids them. Only the SHA-256.
CREATE TABLE email_reply_tokens (
    token_hash bytea       PRIMARY KEY CONSTRAINT email_reply_tokens_hash_check CHECK (octet_length(token_hash) = 32),
    ask_id     text        NOT NULL REFERENCES asks (ask_id),
    account_id text        NOT NULL REFERENCES accounts (account_id) ON DELETE CASCADE,
    created_at timestamptz NOT NULL DEFAULT now(),
    used_at    timestamptz
);
CREATE INDEX email_reply_tokens_ask_idx ON email_reply_tokens (ask_id, account_id);
CREATE INDEX email_reply_tokens_account_idx ON email_reply_tokens (account_id);

-- List-Unsubscribe: the link turns email asks off for its person, with no sign-in.
CREATE TABLE email_unsubscribe_tokens (
    token_hash bytea       PRIMARY KEY CONSTRAINT email_unsubscribe_tokens_hash_check CHECK (octet_length(token_hash) = 32),
    account_id text        NOT NULL REFERENCES accounts (account_id) ON DELETE CASCADE,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX email_unsubscribe_tokens_account_idx ON email_unsubscribe_tokens (account_id);

-- The Message-ID of the ask's mail to one person: set once, so a retried send is the same
-- message, and replies to it are threaded under it (In-Reply-To, References).
CREATE TABLE email_threads (
    ask_id     text NOT NULL REFERENCES asks (ask_id),
    account_id text NOT NULL REFERENCES accounts (account_id) ON DELETE CASCADE,
    message_id text NOT NULL CONSTRAINT email_threads_message_id_key UNIQUE,
    PRIMARY KEY (ask_id, account_id)
);

CREATE FUNCTION compass_enqueue_email(ask asks) RETURNS void
LANGUAGE sql AS $$
    INSERT INTO email_deliveries (delivery_id, account_id, event_type, ask_id)
    SELECT 'mail_' || replace(gen_random_uuid()::text, '-', ''), a.account_id, 'ask', ask.ask_id
    FROM channel_participants p
    JOIN accounts a ON a.account_id = p.account_id
    WHERE p.channel_id = ask.channel_id
      AND a.kind = 'human' AND NOT a.disabled AND a.email IS NOT NULL AND a.email_asks
      AND a.account_id <> (SELECT m.author_account_id FROM messages m
                           WHERE m.message_id = ask.message_id);
$$;

CREATE FUNCTION compass_ask_email_trigger() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM compass_enqueue_email(NEW);
    RETURN NULL;
END;
$$;

CREATE TRIGGER asks_email_created AFTER INSERT ON asks
    FOR EACH ROW WHEN (NEW.status = 'pending')
    EXECUTE FUNCTION compass_ask_email_trigger();
