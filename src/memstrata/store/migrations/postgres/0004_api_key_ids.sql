-- memstrata PostgreSQL schema v5: API keys get a public id and the store remembers that it
-- had keys, as SQLite's schema v12 (migrations/sqlite/0012_api_key_ids.sql) says: the
-- random ``public_id`` names a key in listings and revocation, and ``opened_at`` stays NULL
-- while a key (live or revoked) guards the store.
ALTER TABLE api_keys ADD COLUMN public_id text;
ALTER TABLE api_keys ADD COLUMN opened_at text;
UPDATE api_keys SET public_id = 'key_' || substr(md5(gen_random_uuid()::text || id::text), 1, 24);
ALTER TABLE api_keys ALTER COLUMN public_id SET NOT NULL;
ALTER TABLE api_keys ADD CONSTRAINT api_keys_public_id UNIQUE (public_id);
