-- memstrata schema v5: what became of each LLM reply. "kept" when it validated as sent,
-- "repaired" when items were cut to a bound or dropped for breaking the schema (or it was
-- asked again), "failed" when nothing usable came back. ``truncated`` and ``rejected``
-- count the items cut and dropped; ``dropped`` holds both by reason, as a JSON object.
ALTER TABLE llm_calls ADD COLUMN outcome TEXT NOT NULL DEFAULT 'kept';
ALTER TABLE llm_calls ADD COLUMN truncated INTEGER NOT NULL DEFAULT 0;
ALTER TABLE llm_calls ADD COLUMN rejected INTEGER NOT NULL DEFAULT 0;
ALTER TABLE llm_calls ADD COLUMN dropped TEXT;
UPDATE llm_calls SET outcome = 'failed' WHERE ok = 0;
