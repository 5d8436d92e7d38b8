-- memstrata schema v11: episodes and versions found by the vector they point to. A delete
-- drops the vectors no stored text points to any more (a vector is derived from its text);
-- without these indexes that check read every episode (6 ms a delete at 10,000).
CREATE INDEX IF NOT EXISTS episodes_embed ON episodes(embed_hash);
CREATE INDEX IF NOT EXISTS episode_versions_embed ON episode_versions(embed_hash);
