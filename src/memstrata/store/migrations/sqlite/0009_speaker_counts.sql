-- memstrata schema v9: each namespace's speakers with their episode counts, kept by the
-- store's write paths (one upsert per speaker of a batch, in the batch's transaction),
-- so naming the speakers of a large namespace after a write reads a few rows instead of
-- grouping every episode (195 ms at 300,000). Row triggers kept them too, but doubled
-- the cost of writing an episode (studies/speakers_after_write.py).
CREATE TABLE speaker_counts (
    namespace_id  INTEGER NOT NULL REFERENCES namespaces(id) ON DELETE CASCADE,
    speaker       TEXT NOT NULL,
    n             INTEGER NOT NULL,
    PRIMARY KEY (namespace_id, speaker)
) WITHOUT ROWID;

INSERT INTO speaker_counts (namespace_id, speaker, n)
    SELECT namespace_id, speaker, COUNT(*) FROM episodes
    WHERE speaker IS NOT NULL GROUP BY namespace_id, speaker;
