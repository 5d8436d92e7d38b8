-- memstrata schema v14: of a call's completion tokens, those the server reports as a
-- reasoning model's thought (usage.completion_tokens_details.reasoning_tokens), kept
-- apart so the accounts show what thinking cost; 0 where none was reported.
ALTER TABLE llm_calls ADD COLUMN reasoning_tokens INTEGER NOT NULL DEFAULT 0;
