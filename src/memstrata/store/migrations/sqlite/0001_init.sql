-- memstrata schema v1: namespaces, episodes (+FTS5), the embedding cache, derived records
-- of the five structures with their provenance, LLM accounting and enrichment failures.

-- AUTOINCREMENT: keys are never reused, so caches keyed by them (the vector index, the
-- namespace ids of other connections) can tell a deleted row from a new one.
CREATE TABLE namespaces (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    name        TEXT NOT NULL UNIQUE,
    created_at  TEXT NOT NULL
);

CREATE TABLE episodes (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    namespace_id  INTEGER NOT NULL REFERENCES namespaces(id) ON DELETE CASCADE,
    external_id   TEXT NOT NULL,
    text          TEXT NOT NULL,
    speaker       TEXT,
    role          TEXT,
    occurred_at   TEXT,
    occurred_ts   REAL,
    session       TEXT,
    seq           INTEGER NOT NULL,
    metadata      TEXT,
    content_hash  BLOB NOT NULL,
    embed_hash    BLOB,
    created_at    TEXT NOT NULL,
    UNIQUE (namespace_id, external_id)
);
CREATE INDEX episodes_ns_session ON episodes(namespace_id, session, seq);

-- BM25: one FTS5 table per namespace, fts_<namespace id>, created with the namespace
-- (see SQLiteStore._fts). A shared table would have to join every match back to episodes
-- to filter by namespace, which doubles the cost of a query on a large namespace.

-- Embeddings by content hash: the same text is never embedded twice by the same model.
CREATE TABLE embeddings (
    model  TEXT NOT NULL,
    hash   BLOB NOT NULL,
    vec    BLOB NOT NULL,
    PRIMARY KEY (model, hash)
) WITHOUT ROWID;

-- Derived records. Common columns plus the few each structure filters on; the full record
-- is the JSON in `data`.
CREATE TABLE records (
    id            TEXT PRIMARY KEY,
    namespace_id  INTEGER NOT NULL REFERENCES namespaces(id) ON DELETE CASCADE,
    kind          TEXT NOT NULL,
    data          TEXT NOT NULL,
    created_at    TEXT NOT NULL,
    updated_at    TEXT NOT NULL
);
CREATE INDEX records_ns_kind ON records(namespace_id, kind);

CREATE TABLE entities (
    id          TEXT PRIMARY KEY REFERENCES records(id) ON DELETE CASCADE,
    name        TEXT NOT NULL
);
CREATE INDEX entities_name ON entities(name COLLATE NOCASE);

CREATE TABLE facts (
    id          TEXT PRIMARY KEY REFERENCES records(id) ON DELETE CASCADE,
    subject_id  TEXT NOT NULL,
    object_id   TEXT NOT NULL,
    valid_at    TEXT,
    invalid_at  TEXT
);
CREATE INDEX facts_subject ON facts(subject_id);
CREATE INDEX facts_object ON facts(object_id);

CREATE TABLE categories (
    id     TEXT PRIMARY KEY REFERENCES records(id) ON DELETE CASCADE,
    layer  INTEGER NOT NULL
);

-- Many-to-many parent links of the hierarchy (category over entity or category).
CREATE TABLE category_links (
    parent_id  TEXT NOT NULL REFERENCES records(id) ON DELETE CASCADE,
    child_id   TEXT NOT NULL REFERENCES records(id) ON DELETE CASCADE,
    PRIMARY KEY (parent_id, child_id)
) WITHOUT ROWID;
CREATE INDEX category_links_child ON category_links(child_id);

CREATE TABLE tree_nodes (
    id         TEXT PRIMARY KEY REFERENCES records(id) ON DELETE CASCADE,
    parent_id  TEXT,
    depth      INTEGER NOT NULL
);
CREATE INDEX tree_nodes_parent ON tree_nodes(parent_id);

CREATE TABLE concept_edges (
    id         TEXT PRIMARY KEY REFERENCES records(id) ON DELETE CASCADE,
    source_id  TEXT NOT NULL,
    target_id  TEXT NOT NULL
);

-- Provenance: which episode spans each derived record rests on. Also the episodic edges.
CREATE TABLE provenance (
    record_id   TEXT NOT NULL REFERENCES records(id) ON DELETE CASCADE,
    episode_id  INTEGER NOT NULL REFERENCES episodes(id) ON DELETE CASCADE,
    start       INTEGER NOT NULL,
    "end"       INTEGER NOT NULL,
    PRIMARY KEY (record_id, episode_id, start, "end")
) WITHOUT ROWID;
CREATE INDEX provenance_episode ON provenance(episode_id);

-- Builder progress per episode, so an interrupted build resumes where it stopped.
CREATE TABLE build_progress (
    namespace_id  INTEGER NOT NULL REFERENCES namespaces(id) ON DELETE CASCADE,
    builder       TEXT NOT NULL,
    episode_id    INTEGER NOT NULL REFERENCES episodes(id) ON DELETE CASCADE,
    status        TEXT NOT NULL,
    updated_at    TEXT NOT NULL,
    PRIMARY KEY (namespace_id, builder, episode_id)
) WITHOUT ROWID;

CREATE TABLE llm_calls (
    id                 INTEGER PRIMARY KEY,
    namespace          TEXT,
    stage              TEXT NOT NULL,
    backend            TEXT NOT NULL,
    model              TEXT NOT NULL,
    prompt_tokens      INTEGER NOT NULL,
    completion_tokens  INTEGER NOT NULL,
    latency_ms         REAL NOT NULL,
    cached             INTEGER NOT NULL,
    ok                 INTEGER NOT NULL,
    error              TEXT,
    attempts           INTEGER NOT NULL,
    request_hash       TEXT NOT NULL,
    created_at         TEXT NOT NULL
);
CREATE INDEX llm_calls_stage ON llm_calls(stage);
