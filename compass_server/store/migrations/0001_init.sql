-- Compass schema, version 1: accounts and tokens, workspaces and channels, messages whose
-- blocks are JSONB, and the asks table (lookup by ask_id and the single source of truth for
-- answer state). Ids are text with a kind prefix (acct_, ws_, ch_, msg_, ask_), minted by the
-- store. Forward-only: later changes go into new numbered files.

CREATE TABLE accounts (
    account_id  text        PRIMARY KEY,
    kind        text        NOT NULL CONSTRAINT accounts_kind_check CHECK (kind IN ('human', 'agent')),
    name        text        NOT NULL CONSTRAINT accounts_name_check CHECK (name <> ''),
    disabled    boolean     NOT NULL DEFAULT false,
    created_at  timestamptz NOT NULL DEFAULT now()
);

-- Only the SHA-256 of a token is kept; the token itself is shown once, when it is created.
CREATE TABLE api_tokens (
    token_hash  bytea       PRIMARY KEY CONSTRAINT api_tokens_hash_check CHECK (octet_length(token_hash) = 32),
    account_id  text        NOT NULL REFERENCES accounts (account_id),
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX api_tokens_account_id_idx ON api_tokens (account_id);

CREATE TABLE workspaces (
    workspace_id text        PRIMARY KEY,
    name         text        NOT NULL CONSTRAINT workspaces_name_check CHECK (name <> ''),
    created_at   timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT workspaces_name_key UNIQUE (name)
);

-- Membership of a workspace makes its channels visible (reads); acting needs participation.
CREATE TABLE workspace_members (
    workspace_id text        NOT NULL REFERENCES workspaces (workspace_id),
    account_id   text        NOT NULL REFERENCES accounts (account_id),
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (workspace_id, account_id)
);
CREATE INDEX workspace_members_account_id_idx ON workspace_members (account_id);

-- `revision` is the channel's change counter: every write to the channel bumps it while
-- holding this row's lock, so revisions commit in order (a watcher resuming after revision N
-- can never miss a change that commits later with a smaller number).
CREATE TABLE channels (
    channel_id   text        PRIMARY KEY,
    workspace_id text        NOT NULL REFERENCES workspaces (workspace_id),
    name         text        NOT NULL CONSTRAINT channels_name_check CHECK (name <> ''),
    revision     bigint      NOT NULL DEFAULT 0,
    created_at   timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT channels_workspace_name_key UNIQUE (workspace_id, name)
);

CREATE TABLE channel_participants (
    channel_id  text        NOT NULL REFERENCES channels (channel_id),
    account_id  text        NOT NULL REFERENCES accounts (account_id),
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (channel_id, account_id)
);
CREATE INDEX channel_participants_account_id_idx ON channel_participants (account_id);

-- `blocks` holds the block set WITHOUT answer state (that lives in `asks`, see below).
-- `created_revision` orders messages oldest first (pagination); `revision` is the channel
-- revision of the latest change to the message (WatchChannel replay).
CREATE TABLE messages (
    message_id        text        PRIMARY KEY,
    channel_id        text        NOT NULL REFERENCES channels (channel_id),
    author_account_id text        NOT NULL REFERENCES accounts (account_id),
    client_message_id text        CONSTRAINT messages_client_message_id_check CHECK (client_message_id <> ''),
    blocks            jsonb       NOT NULL CONSTRAINT messages_blocks_check CHECK (jsonb_typeof(blocks) = 'array'),
    created_revision  bigint      NOT NULL,
    revision          bigint      NOT NULL,
    created_at        timestamptz NOT NULL DEFAULT now(),
    updated_at        timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT messages_client_message_id_key UNIQUE (channel_id, client_message_id),
    CONSTRAINT messages_created_revision_key UNIQUE (channel_id, created_revision),
    CONSTRAINT messages_revision_key UNIQUE (channel_id, revision)
);

-- One row per Ask: finds an ask by ask_id in O(log n) (primary key) and is the ONLY place
-- answer state is stored. Reads merge it into the message's ask block, so no UpdateMessage
-- can ever overwrite or erase an answer. `answers` is the per-question answer list.
CREATE TABLE asks (
    ask_id                 text        PRIMARY KEY,
    message_id             text        NOT NULL REFERENCES messages (message_id),
    channel_id             text        NOT NULL REFERENCES channels (channel_id),
    answers                jsonb,
    answered_by_account_id text        REFERENCES accounts (account_id),
    answered_at            timestamptz,
    CONSTRAINT asks_answer_state_check CHECK (
        (answers IS NULL AND answered_by_account_id IS NULL AND answered_at IS NULL)
        OR (jsonb_typeof(answers) = 'array' AND answered_by_account_id IS NOT NULL AND answered_at IS NOT NULL)
    )
);
CREATE INDEX asks_message_id_idx ON asks (message_id);
