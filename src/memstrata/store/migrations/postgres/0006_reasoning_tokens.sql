-- memstrata PostgreSQL schema v6: of a call's completion tokens, those the server reports
-- as a reasoning model's thought, kept apart; SQLite's v14.
ALTER TABLE llm_calls ADD COLUMN reasoning_tokens integer NOT NULL DEFAULT 0;
