-- memstrata schema v4: every derived record names the builder that wrote it. Designs share
-- a store, not records: a builder reads, replaces, deletes and rebuilds only its own, so
-- two designs that both write entities or facts never see or drop each other's.
-- Records written before this version have builder '' until the engine adopts them on
-- open (by the record kinds each registered builder declares).

ALTER TABLE records ADD COLUMN builder TEXT NOT NULL DEFAULT '';
CREATE INDEX records_ns_builder_kind ON records(namespace_id, builder, kind);
CREATE INDEX records_unowned ON records(namespace_id, kind) WHERE builder='';

-- Repairs: what a delete or an update took away from each builder's structures, written in
-- the same transaction as the removal. Aggregated text (summaries, fact sheets, reports,
-- tree nodes) may still hold the removed text; the builder re-derives or drops it from
-- this log, then clears its entries, so a crash in between only delays the repair.
--   what = 'episode': an episode deleted or replaced (ref: its id; data: session, seq,
--                     whether it was deleted)
--          'changed': a record of the builder that lost sources or links (ref: its id)
--          'dropped': a record the removal took with it (ref: its id; data: its JSON)
CREATE TABLE repairs (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    namespace_id  INTEGER NOT NULL REFERENCES namespaces(id) ON DELETE CASCADE,
    builder       TEXT NOT NULL,
    what          TEXT NOT NULL,
    ref           TEXT NOT NULL,
    data          TEXT,
    created_at    TEXT NOT NULL
);
CREATE INDEX repairs_ns_builder ON repairs(namespace_id, builder, id);
