-- memstrata schema v3: episode history. Updating an episode keeps the version it replaces
-- here (text, context, hashes, when it was written and when it was replaced); the episode
-- row always holds the current version. Versions go with their episode (and namespace).

-- AUTOINCREMENT: ids only grow, so the largest id of a namespace changes with every update.
-- Vector indexes held by other connections compare it to notice that an episode's vector
-- was replaced in place (same key, same count of rows: nothing else would tell them).
CREATE TABLE episode_versions (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    namespace_id  INTEGER NOT NULL REFERENCES namespaces(id) ON DELETE CASCADE,
    episode_id    INTEGER NOT NULL REFERENCES episodes(id) ON DELETE CASCADE,
    version       INTEGER NOT NULL,
    text          TEXT NOT NULL,
    speaker       TEXT,
    role          TEXT,
    occurred_at   TEXT,
    session       TEXT,
    metadata      TEXT,
    content_hash  BLOB NOT NULL,
    embed_hash    BLOB,
    written_at    TEXT NOT NULL,
    replaced_at   TEXT NOT NULL,
    UNIQUE (episode_id, version)
);
CREATE INDEX episode_versions_ns ON episode_versions(namespace_id, id);
