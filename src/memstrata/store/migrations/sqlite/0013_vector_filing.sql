-- memstrata schema v12: what a delete must find besides the rows (docs/engine.md, "Deleted
-- means gone").
--
-- Vectors made for a design's texts (names, facts, summaries, sentences a route compares)
-- are filed under the namespace whose work made them (0: none) and 32-bit keys of their
-- text's content words, so a delete drops those made from the words it removed. An
-- episode's own vector is not filed: its row points to it.
CREATE TABLE IF NOT EXISTS embedding_terms (
    namespace_id  INTEGER NOT NULL,
    term          INTEGER NOT NULL,
    hash          BLOB NOT NULL,
    PRIMARY KEY (namespace_id, term, hash)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS embedding_terms_hash ON embedding_terms(hash);

-- Vectors stored before filing that no episode or version points to were made for a
-- design's texts, from words nobody knows now: filed under no namespace and the word key
-- -1, which every delete takes (a design embeds a text again when it next needs it).
INSERT OR IGNORE INTO embedding_terms (namespace_id, term, hash)
SELECT 0, -1, hash FROM embeddings WHERE hash NOT IN (
    SELECT embed_hash FROM episodes WHERE embed_hash IS NOT NULL
    UNION SELECT embed_hash FROM episode_versions WHERE embed_hash IS NOT NULL
);

-- Error texts are read by namespace when a delete looks for the ones quoting its text.
CREATE INDEX IF NOT EXISTS llm_calls_errors ON llm_calls(namespace) WHERE error IS NOT NULL;
CREATE INDEX IF NOT EXISTS build_progress_errors ON build_progress(namespace_id)
    WHERE error IS NOT NULL;
