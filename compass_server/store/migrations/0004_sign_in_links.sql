-- Compass schema, version 4: sign-in per device without pasting a token (issue 13).
-- `compass admin sign-in-link` mints a one-time code (only its SHA-256 is kept, like tokens);
-- the browser exchanges it once, before it expires, for a session token: an api_tokens row
-- of kind 'session', revocable with `compass admin revoke-sessions` (deleted; an ordinary
-- token is never touched).
-- Forward-only: never edit this file once applied (the runner records its checksum).

CREATE TABLE sign_in_links (
    code_hash   bytea       PRIMARY KEY CONSTRAINT sign_in_links_hash_check CHECK (octet_length(code_hash) = 32),
    account_id  text        NOT NULL REFERENCES accounts (account_id),
    created_at  timestamptz NOT NULL DEFAULT now(),
    expires_at  timestamptz NOT NULL,
    used_at     timestamptz,
    revoked_at  timestamptz
);
CREATE INDEX sign_in_links_account_id_idx ON sign_in_links (account_id);

ALTER TABLE api_tokens
    ADD COLUMN kind text NOT NULL DEFAULT 'api' CONSTRAINT api_tokens_kind_check CHECK (kind IN ('api', 'session'));
