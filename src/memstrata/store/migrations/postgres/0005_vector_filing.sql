-- memstrata PostgreSQL schema v4: what a delete must find besides the rows (docs/engine.md,
-- "Deleted means gone"); SQLite's v12.
--
-- Vectors made for a design's texts are filed under the namespace whose work made them
-- (0: none) and 32-bit keys of their text's content words, so a delete drops those made
-- from the words it removed. An episode's own vector is not filed: its row points to it.
CREATE TABLE embedding_terms (
    namespace_id  bigint NOT NULL,
    term          bigint NOT NULL,
    hash          bytea NOT NULL,
    PRIMARY KEY (namespace_id, term, hash)
);
CREATE INDEX embedding_terms_hash ON embedding_terms(hash);

-- Which vectors an episode or a version still points to, asked by hash alone.
CREATE INDEX episodes_embed_hash ON episodes(embed_hash);
CREATE INDEX episode_versions_embed_hash ON episode_versions(embed_hash);

-- Vectors stored before filing that no episode or version points to were made for a
-- design's texts, from words nobody knows now: filed under no namespace and the word key
-- -1, which every delete takes (a design embeds a text again when it next needs it).
INSERT INTO embedding_terms (namespace_id, term, hash)
SELECT DISTINCT 0, -1, m.hash FROM embeddings m
WHERE NOT EXISTS (SELECT 1 FROM episodes e WHERE e.embed_hash = m.hash)
  AND NOT EXISTS (SELECT 1 FROM episode_versions v WHERE v.embed_hash = m.hash)
ON CONFLICT DO NOTHING;

-- Error texts are read by namespace when a delete looks for the ones quoting its text.
CREATE INDEX llm_calls_errors ON llm_calls(namespace) WHERE error IS NOT NULL;
CREATE INDEX build_progress_errors ON build_progress(namespace_id) WHERE error IS NOT NULL;
