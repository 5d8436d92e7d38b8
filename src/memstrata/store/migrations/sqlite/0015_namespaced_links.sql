-- memstrata schema v15: record_links and job_episodes carry their namespace's id first, as
-- on PostgreSQL, so that both stores share one shape of these tables and one SQL for them.
-- Record ids and job keys are unique in the whole file here, so the keys stay as they
-- were (a cascade from records, jobs or episodes finds its rows by them).
CREATE TABLE record_links_v15 (
    namespace_id  INTEGER NOT NULL,
    parent_id     TEXT NOT NULL REFERENCES records(id) ON DELETE CASCADE,
    child_id      TEXT NOT NULL REFERENCES records(id) ON DELETE CASCADE,
    PRIMARY KEY (parent_id, child_id)
) WITHOUT ROWID;
INSERT INTO record_links_v15 (namespace_id, parent_id, child_id)
SELECT r.namespace_id, l.parent_id, l.child_id FROM record_links l JOIN records r
    ON r.id = l.parent_id;
DROP TABLE record_links;
ALTER TABLE record_links_v15 RENAME TO record_links;
CREATE INDEX record_links_child ON record_links(child_id);

CREATE TABLE job_episodes_v15 (
    namespace_id  INTEGER NOT NULL,
    job           INTEGER NOT NULL REFERENCES jobs(key) ON DELETE CASCADE,
    episode_id    INTEGER NOT NULL REFERENCES episodes(id) ON DELETE CASCADE,
    PRIMARY KEY (job, episode_id)
) WITHOUT ROWID;
INSERT INTO job_episodes_v15 (namespace_id, job, episode_id)
SELECT j.namespace_id, je.job, je.episode_id FROM job_episodes je JOIN jobs j
    ON j.key = je.job;
DROP TABLE job_episodes;
ALTER TABLE job_episodes_v15 RENAME TO job_episodes;
CREATE INDEX job_episodes_episode ON job_episodes(episode_id);
