-- memstrata PostgreSQL schema v1: what the SQLite schema holds at its v7, laid out so the
-- tables can later be sharded by namespace: every table of a namespace's data carries
-- namespace_id first in its primary key, and its foreign keys go through it.
-- (The pgvector extension is created before this runs; see PostgresStore._migrate.)

-- Ids come from sequences and are never reused, so a key held by another connection
-- can tell a deleted row from a new one (as AUTOINCREMENT does in SQLite).
CREATE TABLE namespaces (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name        text NOT NULL UNIQUE,
    created_at  text NOT NULL
);

-- Episode keys are global (callers look episodes up by key alone), from one sequence.
CREATE SEQUENCE episode_keys;
CREATE TABLE episodes (
    namespace_id  bigint NOT NULL REFERENCES namespaces(id) ON DELETE CASCADE,
    id            bigint NOT NULL DEFAULT nextval('episode_keys'),
    external_id   text NOT NULL,
    text          text NOT NULL,
    speaker       text,
    role          text,
    occurred_at   text,
    occurred_ts   double precision,
    session       text,
    seq           bigint NOT NULL,
    metadata      text,
    content_hash  bytea NOT NULL,
    embed_hash    bytea,
    created_at    text NOT NULL,
    index_len     integer NOT NULL DEFAULT 0,  -- tokens in the full-text body (BM25's |D|)
    PRIMARY KEY (namespace_id, id),
    UNIQUE (namespace_id, external_id)
);
CREATE INDEX episodes_key ON episodes(id);
CREATE INDEX episodes_ns_session ON episodes(namespace_id, session, seq);
CREATE INDEX episodes_embed ON episodes(namespace_id, embed_hash);

-- BM25 as FTS5 computes it: the postings of each term (stemmed as FTS5's porter unicode61
-- tokenizer does, see store/postgres/tokenize.py) with its positions, for phrases; the
-- per-namespace totals give N and the average length.
CREATE TABLE bm25_postings (
    namespace_id  bigint NOT NULL,
    term          text NOT NULL,
    episode_id    bigint NOT NULL,
    tf            integer NOT NULL,
    positions     integer[] NOT NULL,
    PRIMARY KEY (namespace_id, term, episode_id),
    FOREIGN KEY (namespace_id, episode_id) REFERENCES episodes(namespace_id, id) ON DELETE CASCADE
);
CREATE INDEX bm25_postings_episode ON bm25_postings(namespace_id, episode_id);

CREATE TABLE bm25_stats (
    namespace_id  bigint PRIMARY KEY REFERENCES namespaces(id) ON DELETE CASCADE,
    docs          bigint NOT NULL,
    tokens        bigint NOT NULL
);

-- Embeddings by content hash (the embedding cache), stored as half precision like the
-- SQLite store's float16 blobs. An HNSW index (cosine) is made per dimension when the
-- first vector of that dimension arrives (embeddings_hnsw_<dim>).
CREATE TABLE embeddings (
    model  text NOT NULL,
    hash   bytea NOT NULL,
    dim    integer NOT NULL,
    vec    halfvec NOT NULL,
    PRIMARY KEY (model, hash)
);

-- Derived records, with the builder that owns them; the full record is the JSON in data.
-- ord keeps the order of first insertion (SQLite's rowid).
CREATE TABLE records (
    namespace_id  bigint NOT NULL REFERENCES namespaces(id) ON DELETE CASCADE,
    id            text NOT NULL,
    ord           bigint GENERATED ALWAYS AS IDENTITY,
    kind          text NOT NULL,
    builder       text NOT NULL DEFAULT '',
    data          text NOT NULL,
    created_at    text NOT NULL,
    updated_at    text NOT NULL,
    PRIMARY KEY (namespace_id, id)
);
CREATE INDEX records_id ON records(id);
CREATE INDEX records_ns_builder_kind ON records(namespace_id, builder, kind, ord);
CREATE INDEX records_ns_kind ON records(namespace_id, kind, ord);

-- Parent links of the hierarchy; checked at the end of a write (children may come later
-- in the same batch), cascaded at once when either record goes.
CREATE TABLE category_links (
    namespace_id  bigint NOT NULL,
    parent_id     text NOT NULL,
    child_id      text NOT NULL,
    PRIMARY KEY (namespace_id, parent_id, child_id),
    FOREIGN KEY (namespace_id, parent_id) REFERENCES records(namespace_id, id)
        ON DELETE CASCADE DEFERRABLE INITIALLY DEFERRED,
    FOREIGN KEY (namespace_id, child_id) REFERENCES records(namespace_id, id)
        ON DELETE CASCADE DEFERRABLE INITIALLY DEFERRED
);
CREATE INDEX category_links_child ON category_links(namespace_id, child_id);

CREATE TABLE provenance (
    namespace_id  bigint NOT NULL,
    record_id     text NOT NULL,
    episode_id    bigint NOT NULL,
    start         integer NOT NULL,
    "end"         integer NOT NULL,
    PRIMARY KEY (namespace_id, record_id, episode_id, start, "end"),
    FOREIGN KEY (namespace_id, record_id) REFERENCES records(namespace_id, id) ON DELETE CASCADE,
    FOREIGN KEY (namespace_id, episode_id) REFERENCES episodes(namespace_id, id) ON DELETE CASCADE
);
CREATE INDEX provenance_episode ON provenance(namespace_id, episode_id);

-- The build queue: marks per (namespace, builder, episode); no mark or a due failed one
-- is pending work. One lease per namespace and builder.
CREATE TABLE build_progress (
    namespace_id  bigint NOT NULL,
    builder       text NOT NULL,
    episode_id    bigint NOT NULL,
    status        text NOT NULL,
    updated_at    text NOT NULL,
    attempts      integer NOT NULL DEFAULT 0,
    error         text,
    retry_at      double precision,
    PRIMARY KEY (namespace_id, builder, episode_id),
    FOREIGN KEY (namespace_id, episode_id) REFERENCES episodes(namespace_id, id) ON DELETE CASCADE
);
CREATE INDEX build_progress_episode ON build_progress(namespace_id, episode_id);

CREATE TABLE build_leases (
    namespace_id  bigint NOT NULL REFERENCES namespaces(id) ON DELETE CASCADE,
    builder       text NOT NULL,
    owner         text NOT NULL,
    expires       double precision NOT NULL,
    PRIMARY KEY (namespace_id, builder)
);

-- Versions of episodes that updates replaced. ids only grow.
CREATE TABLE episode_versions (
    namespace_id  bigint NOT NULL,
    id            bigint GENERATED ALWAYS AS IDENTITY,
    episode_id    bigint NOT NULL,
    version       integer NOT NULL,
    text          text NOT NULL,
    speaker       text,
    role          text,
    occurred_at   text,
    session       text,
    metadata      text,
    content_hash  bytea NOT NULL,
    embed_hash    bytea,
    written_at    text NOT NULL,
    replaced_at   text NOT NULL,
    PRIMARY KEY (namespace_id, id),
    UNIQUE (namespace_id, episode_id, version),
    FOREIGN KEY (namespace_id, episode_id) REFERENCES episodes(namespace_id, id) ON DELETE CASCADE
);

-- What deletes and updates took from each builder's structures (see base.Repairs).
CREATE TABLE repairs (
    namespace_id  bigint NOT NULL REFERENCES namespaces(id) ON DELETE CASCADE,
    id            bigint GENERATED ALWAYS AS IDENTITY,
    builder       text NOT NULL,
    what          text NOT NULL,
    ref           text NOT NULL,
    data          text,
    created_at    text NOT NULL,
    PRIMARY KEY (namespace_id, id)
);
CREATE INDEX repairs_ns_builder ON repairs(namespace_id, builder, id);

CREATE TABLE llm_calls (
    id                 bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    namespace          text,
    stage              text NOT NULL,
    backend            text NOT NULL,
    model              text NOT NULL,
    prompt_tokens      integer NOT NULL,
    completion_tokens  integer NOT NULL,
    latency_ms         double precision NOT NULL,
    cached             integer NOT NULL,
    ok                 integer NOT NULL,
    error              text,
    attempts           integer NOT NULL,
    request_hash       text NOT NULL,
    created_at         text NOT NULL,
    outcome            text NOT NULL DEFAULT 'kept',
    truncated          integer NOT NULL DEFAULT 0,
    rejected           integer NOT NULL DEFAULT 0,
    dropped            text
);
CREATE INDEX llm_calls_stage ON llm_calls(stage);

CREATE TABLE api_keys (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    hash        text NOT NULL UNIQUE,
    prefix      text NOT NULL,
    namespaces  text NOT NULL,
    scope       text NOT NULL CHECK (scope IN ('read', 'write', 'admin')),
    label       text,
    created_at  text NOT NULL,
    revoked_at  text
);

-- Jobs of the service: their state is read from build_progress when asked for.
CREATE TABLE jobs (
    namespace_id  bigint NOT NULL REFERENCES namespaces(id) ON DELETE CASCADE,
    key           bigint GENERATED ALWAYS AS IDENTITY,
    id            text NOT NULL UNIQUE,
    kind          text NOT NULL,
    recipe        text NOT NULL,
    builders      text NOT NULL,
    episodes      integer NOT NULL,
    created_at    text NOT NULL,
    created_ts    double precision NOT NULL,
    PRIMARY KEY (namespace_id, key)
);
CREATE INDEX jobs_created ON jobs(created_ts);

CREATE TABLE job_episodes (
    namespace_id  bigint NOT NULL,
    job           bigint NOT NULL,
    episode_id    bigint NOT NULL,
    PRIMARY KEY (namespace_id, job, episode_id),
    FOREIGN KEY (namespace_id, job) REFERENCES jobs(namespace_id, key) ON DELETE CASCADE,
    FOREIGN KEY (namespace_id, episode_id) REFERENCES episodes(namespace_id, id) ON DELETE CASCADE
);
CREATE INDEX job_episodes_episode ON job_episodes(namespace_id, episode_id);
