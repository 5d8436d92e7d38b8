-- memstrata schema v7: jobs of the service. A job names the episodes one add or update
-- left to build and the builders of the recipe that builds them; its state is not kept
-- here but read from build_progress each time it is asked for, so it cannot say more than
-- the marks do (a worker killed mid-job leaves the job running, never succeeded).
-- ``episodes`` is how many it covered when made; job_episodes loses the rows of episodes
-- deleted since (the difference is reported as removed).
CREATE TABLE jobs (
    key           INTEGER PRIMARY KEY AUTOINCREMENT,
    id            TEXT NOT NULL UNIQUE,
    namespace_id  INTEGER NOT NULL REFERENCES namespaces(id) ON DELETE CASCADE,
    kind          TEXT NOT NULL,
    recipe        TEXT NOT NULL,
    builders      TEXT NOT NULL,
    episodes      INTEGER NOT NULL,
    created_at    TEXT NOT NULL,
    created_ts    REAL NOT NULL
);
CREATE INDEX jobs_created ON jobs(created_ts);

CREATE TABLE job_episodes (
    job         INTEGER NOT NULL REFERENCES jobs(key) ON DELETE CASCADE,
    episode_id  INTEGER NOT NULL REFERENCES episodes(id) ON DELETE CASCADE,
    PRIMARY KEY (job, episode_id)
) WITHOUT ROWID;
CREATE INDEX job_episodes_episode ON job_episodes(episode_id);
