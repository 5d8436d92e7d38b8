-- memstrata schema v6: API keys of the service. Only a key's SHA-256 is kept (the key is
-- shown once, when made); ``prefix`` (its first characters) names it in listings.
-- ``namespaces`` is a JSON list, or ["*"] for every namespace; ``scope`` is read, write or
-- admin (each includes the one before). A revoked key keeps its row, so that listings say
-- when it was revoked.
CREATE TABLE api_keys (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    hash        TEXT NOT NULL UNIQUE,
    prefix      TEXT NOT NULL,
    namespaces  TEXT NOT NULL,
    scope       TEXT NOT NULL CHECK (scope IN ('read', 'write', 'admin')),
    label       TEXT,
    created_at  TEXT NOT NULL,
    revoked_at  TEXT
);
