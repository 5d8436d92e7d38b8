-- memstrata PostgreSQL schema v3: each namespace's speakers with their episode counts,
-- kept by the store's write paths in the transaction that writes the episodes (one
-- upsert per speaker of a batch), so naming a large namespace's speakers reads a few
-- rows instead of grouping every episode.
CREATE TABLE speaker_counts (
    namespace_id  bigint NOT NULL REFERENCES namespaces(id) ON DELETE CASCADE,
    speaker       text NOT NULL,
    n             bigint NOT NULL,
    PRIMARY KEY (namespace_id, speaker)
);

INSERT INTO speaker_counts (namespace_id, speaker, n)
    SELECT namespace_id, speaker, count(*) FROM episodes
    WHERE speaker IS NOT NULL GROUP BY namespace_id, speaker;
