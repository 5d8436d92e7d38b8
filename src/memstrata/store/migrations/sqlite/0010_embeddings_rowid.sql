-- memstrata schema v10: vectors in a rowid table, found by a unique index on (model, hash).
-- As a WITHOUT ROWID table each 800-byte row was its own key, so interior pages held
-- whole rows (four to a page) and pages filled in hash order stayed a quarter empty:
-- 1,029 bytes per stored vector at 660,000 vectors. Appended by rowid, five rows fill a
-- page; the index holds the 37-byte keys. Existing vectors are copied once, here.
CREATE TABLE embeddings_v10 (
    model  TEXT NOT NULL,
    hash   BLOB NOT NULL,
    vec    BLOB NOT NULL
);

INSERT INTO embeddings_v10 (model, hash, vec) SELECT model, hash, vec FROM embeddings;

DROP TABLE embeddings;

ALTER TABLE embeddings_v10 RENAME TO embeddings;

CREATE UNIQUE INDEX embeddings_key ON embeddings (model, hash);
