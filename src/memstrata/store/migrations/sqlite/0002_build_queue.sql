-- memstrata schema v2: the build queue. A builder's pending work is every episode without
-- a 'done' mark; failed attempts keep their error and a retry time, and after the last
-- allowed attempt the mark is 'dead' until retried by hand. One lease per namespace and
-- builder keeps two processes from folding the same episodes in twice.

ALTER TABLE build_progress ADD COLUMN attempts INTEGER NOT NULL DEFAULT 0;
ALTER TABLE build_progress ADD COLUMN error TEXT;
ALTER TABLE build_progress ADD COLUMN retry_at REAL;

CREATE TABLE build_leases (
    namespace_id  INTEGER NOT NULL REFERENCES namespaces(id) ON DELETE CASCADE,
    builder       TEXT NOT NULL,
    owner         TEXT NOT NULL,
    expires       REAL NOT NULL,
    PRIMARY KEY (namespace_id, builder)
) WITHOUT ROWID;
