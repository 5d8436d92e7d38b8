-- memstrata schema v12: API keys get a public id and the store remembers that it had keys.
-- ``public_id`` ("key_" and 24 random hex digits) is what listings and revocation name;
-- the row number stays internal, so ids reveal neither how many keys exist nor which
-- comes next. ``opened_at`` is NULL while a key guards the store: once a store has had a
-- key it answers only with a valid one, even after every key is revoked, until the
-- operator reopens it (`memstrata keys reopen`), which stamps the revoked keys' rows.
-- The table is rebuilt: SQLite cannot add a NOT NULL UNIQUE column to one with rows.
CREATE TABLE api_keys_v12 (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    public_id   TEXT NOT NULL UNIQUE,
    hash        TEXT NOT NULL UNIQUE,
    prefix      TEXT NOT NULL,
    namespaces  TEXT NOT NULL,
    scope       TEXT NOT NULL CHECK (scope IN ('read', 'write', 'admin')),
    label       TEXT,
    created_at  TEXT NOT NULL,
    revoked_at  TEXT,
    opened_at   TEXT
);
INSERT INTO api_keys_v12 (id, public_id, hash, prefix, namespaces, scope, label, created_at,
                          revoked_at)
    SELECT id, 'key_' || lower(hex(randomblob(12))), hash, prefix, namespaces, scope, label,
           created_at, revoked_at
    FROM api_keys ORDER BY id;
DROP TABLE api_keys;
ALTER TABLE api_keys_v12 RENAME TO api_keys;
