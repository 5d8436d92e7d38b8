-- memstrata PostgreSQL schema v2: the store names no design. The hierarchy's link table
-- becomes the generic record_links: the many-to-many links a record kind declares
-- (Derived.link_fields), kept in step by the store when a linked record goes.
ALTER TABLE category_links RENAME TO record_links;
ALTER INDEX category_links_child RENAME TO record_links_child;
ALTER INDEX category_links_pkey RENAME TO record_links_pkey;
