"""The SQL of the PostgreSQL store (statements and column lists; only our own text is ever
interpolated into them)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from typing import TypeAlias

    import asyncpg
    from asyncpg.pool import PoolConnectionProxy

    _Conn: TypeAlias = PoolConnectionProxy[asyncpg.Record]


# ---------------------------------------------------------------------------------------------
# SQL

ACCOUNT_COLUMNS: Final = "account_id, kind, name, disabled, created_at"

CHANNEL_COLUMNS: Final = "channel_id, workspace_id, name, revision, created_at"

MESSAGE_COLUMNS: Final = (
    "message_id, channel_id, author_account_id, client_message_id, blocks, "
    "created_revision, revision, created_at, updated_at, "
    # Who wrote it, by name and kind (accounts are never deleted; the primary key finds it).
    "(SELECT row(au.name, au.kind) FROM accounts au "
    "WHERE au.account_id = messages.author_account_id) AS author"
)


PING: Final = "SELECT 1"

NOTIFY: Final = "SELECT pg_notify($1, $2)"


INSERT_WORKSPACE: Final = """
    INSERT INTO workspaces (workspace_id, name)
    VALUES ($1, $2)
    ON CONFLICT (workspace_id) DO NOTHING
    RETURNING workspace_id, name, created_at
"""

INSERT_CHANNEL: Final = f"""
    INSERT INTO channels (channel_id, workspace_id, name)
    VALUES ($1, $2, $3)
    ON CONFLICT (channel_id) DO NOTHING
    RETURNING {CHANNEL_COLUMNS}
"""  # noqa: S608 -- only our own column list is interpolated

INSERT_ACCOUNT: Final = f"""
    INSERT INTO accounts (account_id, kind, name)
    VALUES ($1, $2, $3)
    ON CONFLICT (account_id) DO NOTHING
    RETURNING {ACCOUNT_COLUMNS}
"""  # noqa: S608 -- only our own column list is interpolated

ANY_ACCOUNT: Final = "SELECT EXISTS (SELECT 1 FROM accounts)"

INSERT_TOKEN: Final = "INSERT INTO api_tokens (token_hash, account_id) VALUES ($1, $2)"  # noqa: S105 - SQL, not a secret

SELECT_ACCOUNT: Final = f"SELECT {ACCOUNT_COLUMNS} FROM accounts WHERE account_id = $1"  # noqa: S608 -- only our own column list is interpolated

DISABLE_ACCOUNT: Final = f"""
    UPDATE accounts SET disabled = true
    WHERE account_id = $1
    RETURNING {ACCOUNT_COLUMNS}
"""  # noqa: S608 -- only our own column list is interpolated

INSERT_SESSION_TOKEN: Final = (
    "INSERT INTO api_tokens (token_hash, account_id, kind) VALUES ($1, $2, 'session')"  # noqa: S105 - SQL, not a secret
)

INSERT_SIGN_IN_LINK: Final = """
    INSERT INTO sign_in_links (code_hash, account_id, expires_at)
    VALUES ($1, $2, now() + $3::interval)
    RETURNING expires_at
"""

# Used once: the UPDATE takes the row, so two exchanges of one code cannot both succeed.
USE_SIGN_IN_LINK: Final = f"""
    WITH used AS (
        UPDATE sign_in_links SET used_at = now()
        WHERE code_hash = $1 AND used_at IS NULL AND revoked_at IS NULL AND expires_at > now()
        RETURNING account_id
    )
    SELECT {ACCOUNT_COLUMNS} FROM accounts WHERE account_id = (SELECT account_id FROM used)
"""  # noqa: S608 -- only our own column list is interpolated

DELETE_SESSIONS: Final = "DELETE FROM api_tokens WHERE account_id = $1 AND kind = 'session'"
# revoke-sessions also ends the account's devices: no more pushes, no answer from them.
DELETE_PUSH_SUBSCRIPTIONS: Final = "DELETE FROM push_subscriptions WHERE account_id = $1"
VOID_ANSWER_TOKENS: Final = (
    "UPDATE push_answer_tokens SET used_at = now() WHERE account_id = $1 AND used_at IS NULL"
)
# ... and the reply addresses of the mails sent to it (docs/answering/email.md).
VOID_REPLY_TOKENS: Final = (
    "UPDATE email_reply_tokens SET used_at = now() WHERE account_id = $1 AND used_at IS NULL"
)

VOID_SIGN_IN_LINKS: Final = """
    UPDATE sign_in_links SET revoked_at = now()
    WHERE account_id = $1 AND used_at IS NULL AND revoked_at IS NULL
"""

SELECT_VALID_TOKEN_HASHES: Final = """
    SELECT t.token_hash
    FROM api_tokens t
    JOIN accounts a ON a.account_id = t.account_id
    WHERE t.token_hash = ANY($1::bytea[]) AND NOT a.disabled
"""  # noqa: S105 - SQL, not a secret

SELECT_ACCOUNT_BY_TOKEN: Final = """
    SELECT t.token_hash, a.account_id, a.kind, a.name, a.disabled, a.created_at
    FROM api_tokens t
    JOIN accounts a ON a.account_id = t.account_id
    WHERE t.token_hash = $1
"""  # noqa: S105 - SQL, not a secret

INSERT_MEMBER: Final = """
    INSERT INTO workspace_members (workspace_id, account_id)
    VALUES ($1, $2)
    ON CONFLICT DO NOTHING
"""

INSERT_MEMBER_OF_CHANNEL: Final = """
    INSERT INTO workspace_members (workspace_id, account_id)
    SELECT workspace_id, $2 FROM channels WHERE channel_id = $1
    ON CONFLICT DO NOTHING
"""

INSERT_PARTICIPANT: Final = """
    INSERT INTO channel_participants (channel_id, account_id)
    VALUES ($1, $2)
    ON CONFLICT DO NOTHING
"""


SELECT_ACCOUNTS: Final = f"SELECT {ACCOUNT_COLUMNS} FROM accounts ORDER BY created_at, account_id"  # noqa: S608 -- only our own column list is interpolated

SELECT_CHANNELS_WITH_PARTICIPANTS: Final = """
    SELECT c.channel_id, c.workspace_id, c.name, c.revision, c.created_at,
        array(
            SELECT p.account_id FROM channel_participants p
            JOIN accounts a ON a.account_id = p.account_id
            WHERE p.channel_id = c.channel_id
            ORDER BY a.created_at, a.account_id
        ) AS participants
    FROM channels c
    ORDER BY c.created_at, c.channel_id
"""

SELECT_PARTICIPATING_CHANNELS: Final = """
    SELECT c.channel_id, c.workspace_id, c.name, c.revision, c.created_at
    FROM channel_participants p
    JOIN channels c ON c.channel_id = p.channel_id
    WHERE p.account_id = $1
    ORDER BY c.created_at, c.channel_id
"""

SELECT_VISIBLE_CHANNEL: Final = """
    SELECT c.channel_id, c.workspace_id, c.name, c.revision, c.created_at
    FROM channels c
    JOIN workspace_members wm ON wm.workspace_id = c.workspace_id AND wm.account_id = $2
    WHERE c.channel_id = $1
"""

SELECT_MEMBER_WORKSPACES: Final = """
    SELECT w.workspace_id, w.name, w.created_at
    FROM workspace_members wm
    JOIN workspaces w ON w.workspace_id = wm.workspace_id
    WHERE wm.account_id = $1
    ORDER BY w.name, w.workspace_id
"""

# Pages and replay batches are bounded by bytes as well as by count (one
# ListMessages of 500 x 1 MB messages took the server to ~1 GB). The sizes are read first
# (only integers come back), then only the rows that fit, in the same snapshot. A message's
# size includes its asks' delivery receipts (up to 64 KiB of payload each, read with it):
# one index probe of asks(message_id) per message sized.
MESSAGE_BYTES: Final = """
    octet_length(blocks::text) + COALESCE((
        SELECT sum(octet_length(a.delivery_detail) + octet_length(a.delivery_payload))
        FROM asks a
        WHERE a.message_id = messages.message_id
    ), 0)
"""
SELECT_PAGE_SIZES: Final = f"""
    SELECT created_revision AS position, {MESSAGE_BYTES} AS bytes
    FROM messages
    WHERE channel_id = $1 AND created_revision > $2
    ORDER BY created_revision
    LIMIT $3
"""  # noqa: S608 -- only our own SQL text is interpolated

SELECT_MESSAGE_PAGE: Final = f"""
    SELECT {MESSAGE_COLUMNS}
    FROM messages
    WHERE channel_id = $1 AND created_revision > $2 AND created_revision <= $3
    ORDER BY created_revision
"""  # noqa: S608 -- only our own column list is interpolated

SELECT_REPLAY_SIZES: Final = f"""
    SELECT revision AS position, {MESSAGE_BYTES} AS bytes
    FROM messages
    WHERE channel_id = $1 AND revision > $2
    ORDER BY revision
    LIMIT $3
"""  # noqa: S608 -- only our own SQL text is interpolated

SELECT_MESSAGES_AFTER: Final = f"""
    SELECT {MESSAGE_COLUMNS}
    FROM messages
    WHERE channel_id = $1 AND revision > $2 AND revision <= $3
    ORDER BY revision
"""  # noqa: S608 -- only our own column list is interpolated

SELECT_MESSAGE: Final = f"SELECT {MESSAGE_COLUMNS} FROM messages WHERE message_id = $1"  # noqa: S608 -- only our own column list is interpolated

SELECT_MESSAGE_BY_CLIENT_ID: Final = f"""
    SELECT {MESSAGE_COLUMNS}
    FROM messages
    WHERE channel_id = $1 AND client_message_id = $2
"""  # noqa: S608 -- only our own column list is interpolated

# The state of an ask the `asks` row holds (merged into its block on every read). With
# `withdraw_at`, from `mcp_waiters`: for a pending MCP ask none of whose waiting calls is still
# there (each left, or ran out), when the leave sweep withdraws it (its last hold's end); NULL
# while a call waits, and for any other ask.
ASK_STATE_COLUMNS: Final = """
    a.answers, a.answered_by_account_id, a.answered_at, ans.name AS answered_by_name,
    a.status, a.deadline, a.on_timeout, a.closed_by_account_id, a.closed_at,
    cls.name AS closed_by_name, a.close_reason,
    a.delivery_state, a.delivery_detail, a.delivery_payload, a.delivery_reported_by,
    a.delivery_reported_at, rep.name AS delivery_reported_by_name,
    (
        SELECT max(w.expires_at) FROM mcp_waiters w
        WHERE w.ask_id = a.ask_id AND a.status = 'pending'
        HAVING bool_and(w.left_at IS NOT NULL OR w.expires_at <= now())
    ) AS withdraw_at
"""

ASK_STATE_JOINS: Final = """
    LEFT JOIN accounts ans ON ans.account_id = a.answered_by_account_id
    LEFT JOIN accounts cls ON cls.account_id = a.closed_by_account_id
    LEFT JOIN accounts rep ON rep.account_id = a.delivery_reported_by
"""

SELECT_ASK_STATE_OF_MESSAGES: Final = f"""
    SELECT a.ask_id, a.message_id, {ASK_STATE_COLUMNS}
    FROM asks a
    {ASK_STATE_JOINS}
    WHERE a.message_id = ANY($1::text[])
"""  # noqa: S608 -- only our own column lists are interpolated

SELECT_PENDING_ASKS: Final = f"""
    SELECT a.ask_id, a.message_id, a.channel_id, c.name AS channel_name, m.blocks,
           m.author_account_id, au.name AS author_name, a.created_at AS asked_at,
           {ASK_STATE_COLUMNS}
    FROM asks a
    JOIN channel_participants p ON p.channel_id = a.channel_id AND p.account_id = $1
    JOIN channels c ON c.channel_id = a.channel_id
    JOIN messages m ON m.message_id = a.message_id
    JOIN accounts au ON au.account_id = m.author_account_id
    {ASK_STATE_JOINS}
    WHERE a.status = 'pending' AND (a.created_at, a.ask_id) > ($2::timestamptz, $3::text)
    ORDER BY a.created_at, a.ask_id
    LIMIT $4
"""  # noqa: S608 -- only our own column lists are interpolated

SELECT_NOTIFIED_ASK: Final = f"""
    SELECT a.ask_id, a.message_id, a.channel_id, c.name AS channel_name, c.workspace_id,
           m.blocks, m.author_account_id, au.name AS author_name, au.kind AS author_kind,
           a.created_at AS asked_at,
           {ASK_STATE_COLUMNS}
    FROM asks a
    JOIN channels c ON c.channel_id = a.channel_id
    JOIN messages m ON m.message_id = a.message_id
    JOIN accounts au ON au.account_id = m.author_account_id
    {ASK_STATE_JOINS}
    WHERE a.ask_id = $1
"""  # noqa: S608 -- only our own column lists are interpolated

SELECT_ASK: Final = f"""
    SELECT a.ask_id, a.message_id, a.channel_id, m.blocks, m.author_account_id,
           {ASK_STATE_COLUMNS},
           EXISTS (
               SELECT 1 FROM channel_participants p
               WHERE p.channel_id = a.channel_id AND p.account_id = $2
           ) AS participant,
           c.revision AS channel_revision
    FROM asks a
    JOIN messages m ON m.message_id = a.message_id
    JOIN channels c ON c.channel_id = a.channel_id
    JOIN workspace_members wm ON wm.workspace_id = c.workspace_id AND wm.account_id = $2
    {ASK_STATE_JOINS}
    WHERE a.ask_id = $1
"""  # noqa: S608 -- only our own column lists are interpolated


# Locks the channel row first: every write to a channel goes through here (see module doc).
LOCK_CHANNEL_FOR_ACTOR: Final = """
    SELECT c.revision,
           EXISTS (
               SELECT 1 FROM workspace_members wm
               WHERE wm.workspace_id = c.workspace_id AND wm.account_id = $2
           ) AS member,
           EXISTS (
               SELECT 1 FROM channel_participants p
               WHERE p.channel_id = c.channel_id AND p.account_id = $2
           ) AS participant
    FROM channels c
    WHERE c.channel_id = $1
    FOR NO KEY UPDATE
"""

LOCK_CHANNEL: Final = "SELECT revision FROM channels WHERE channel_id = $1 FOR NO KEY UPDATE"

BUMP_REVISION: Final = """
    UPDATE channels SET revision = revision + 1
    WHERE channel_id = $1
    RETURNING revision
"""

SELECT_MESSAGE_FOR_ACTOR: Final = """
    SELECT m.channel_id, m.author_account_id
    FROM messages m
    JOIN channels c ON c.channel_id = m.channel_id
    JOIN workspace_members wm ON wm.workspace_id = c.workspace_id AND wm.account_id = $2
    WHERE m.message_id = $1
"""

INSERT_MESSAGE: Final = """
    INSERT INTO messages (message_id, channel_id, author_account_id, client_message_id,
                          blocks, created_revision, revision)
    VALUES ($1, $2, $3, $4, $5, $6, $6)   -- $1 message_id, $2 channel_id, $3 author,
                                          -- $4 client_message_id, $5 blocks, $6 revision
    ON CONFLICT (message_id) DO NOTHING
    RETURNING message_id, created_at, updated_at
"""

# $1 ask ids, $4 their deadlines (ISO 8601 text or NULL: a timestamptz[] parameter would make
# asyncpg introspect its type, which leaves `jit` set on the session), $5 their on_timeout
# policies (parallel arrays).
INSERT_ASKS: Final = """
    INSERT INTO asks (ask_id, message_id, channel_id, deadline, on_timeout)
    SELECT t.ask_id, $2, $3, t.deadline::timestamptz, t.on_timeout
    FROM unnest($1::text[], $4::text[], $5::text[]) AS t(ask_id, deadline, on_timeout)
    ON CONFLICT (ask_id) DO NOTHING
    RETURNING ask_id
"""

UPDATE_MESSAGE_BLOCKS: Final = """
    UPDATE messages SET blocks = $2
    WHERE message_id = $1
"""

REPLACE_MESSAGE: Final = """
    UPDATE messages SET blocks = $2, revision = $3, updated_at = now()
    WHERE message_id = $1
    RETURNING created_at, updated_at
"""

# answer_ask's write in one statement, so in one round trip and (outside a transaction) one
# transaction: bump the channel revision, if it is still $2, under the channel row's lock
# (which `bumped` takes first: the other parts join it); answer the ask; touch its message at
# the new revision; notify, the database completing the payload text with the revision
# ($8 || revision || $9, see ChangeEvent.payload_around_revision). No row when the revision
# was no longer $2: nothing is written. A revision unchanged under the lock means nothing in
# the channel changed since it was read (every write to a channel bumps it under that lock),
# so the ask is still unanswered as read and `answered` always has its row.
ANSWER_ASK: Final = """
    WITH bumped AS (
        UPDATE channels SET revision = revision + 1
        WHERE channel_id = $1 AND revision = $2
        RETURNING revision
    ), answered AS (
        UPDATE asks SET status = 'answered', answers = $4, answered_by_account_id = $5,
                        answered_at = now()
        FROM bumped
        WHERE ask_id = $3 AND status = 'pending'
        RETURNING answered_at
    ), touched AS (
        UPDATE messages SET revision = bumped.revision, updated_at = now()
        FROM bumped
        WHERE message_id = $6
    )
    SELECT answered.answered_at,
           pg_notify($7, $8::text || bumped.revision::text || $9::text)
    FROM bumped, answered
"""

# Closes a pending ask without a participant's answer (the caller holds the channel lock):
# $2 status, $3 who closed it (NULL: the server), $4 reason, $5 the runtime's answers
# (TIMED_OUT; NULL otherwise) recorded as answered by $3.
CLOSE_ASK: Final = """
    UPDATE asks
    SET status = $2, closed_by_account_id = $3, closed_at = now(), close_reason = $4,
        answers = $5,
        answered_by_account_id = CASE WHEN $5::jsonb IS NULL THEN NULL ELSE $3 END,
        answered_at = CASE WHEN $5::jsonb IS NULL THEN NULL ELSE now() END
    WHERE ask_id = $1 AND status = 'pending'
    RETURNING closed_at
"""

# Records an ANSWERED or DECLINED ask's delivery receipt (the caller holds the channel lock):
# $2 state, $3 detail, $4 payload, $5 who reported it. No row when a receipt is already
# stored or the ask has nothing to deliver (judged before, under the same lock).
REPORT_DELIVERY: Final = """
    UPDATE asks
    SET delivery_state = $2, delivery_detail = $3, delivery_payload = $4,
        delivery_reported_by = $5, delivery_reported_at = now()
    WHERE ask_id = $1 AND delivery_state IS NULL AND status IN ('answered', 'declined')
    RETURNING delivery_reported_at
"""

TOUCH_MESSAGE: Final = """
    UPDATE messages SET revision = $2, updated_at = now()
    WHERE message_id = $1
"""

#: Key of the advisory lock held by the one sweeper of a database ("cmpswp" in ASCII).
SWEEPER_LOCK_KEY: Final = 0x636D7073777070

TRY_SWEEPER_LOCK: Final = "SELECT pg_try_advisory_xact_lock($1)"

# Pending asks past their deadline ($1 now), PICK_RECOMMENDED ones past it by the grace ($2
# seconds): the runtime owns that deadline and reports TIMED_OUT itself while it lives.
SELECT_DUE_ASKS: Final = """
    SELECT ask_id, channel_id, message_id
    FROM asks
    WHERE status = 'pending' AND deadline IS NOT NULL AND deadline <= $1
      AND (on_timeout <> 'pick_recommended' OR deadline <= $1 - make_interval(secs => $2))
    ORDER BY channel_id, deadline, ask_id
    LIMIT $3
"""
