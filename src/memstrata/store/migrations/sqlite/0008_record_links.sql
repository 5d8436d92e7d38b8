-- memstrata schema v8: the store names no design. The per-kind column tables (entities,
-- facts, categories, tree_nodes, concept_edges) are dropped: nothing read them, and a
-- record's JSON holds every field of its kind. The hierarchy's link table becomes the
-- generic record_links: the many-to-many links a record kind declares
-- (Derived.link_fields), kept in step by the store when a linked record goes.
DROP TABLE entities;
DROP TABLE facts;
DROP TABLE categories;
DROP TABLE tree_nodes;
DROP TABLE concept_edges;
ALTER TABLE category_links RENAME TO record_links;
DROP INDEX category_links_child;
CREATE INDEX record_links_child ON record_links(child_id);
