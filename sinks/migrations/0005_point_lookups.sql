-- 0005_point_lookups: a question about one view reads that view's rows, not every view's. A
-- view's activations (the union of its files' version logs: each entry is repeated in up to ten
-- files) and its names get tables of their own, each distinct row once, written with the files
-- that bring them. Per-view lookups go through indexes on view_id and version_hash; the indexes
-- over the per-file child rows (10^7 rows at 10^6 files, held in the writer's memory) are dropped:
-- nothing looks those rows up one by one.

DROP VIEW IF EXISTS activations; -- the query view over version_log this table replaces
DROP VIEW IF EXISTS view_drops;  -- replaced by the per-view macro view_drop(view_id)

-- derived: a view's activation history: each distinct (version, time) of its files' version logs.
CREATE TABLE activations (
    view_id VARCHAR NOT NULL,           -- view_files.view_id
    version_id INTEGER NOT NULL,        -- version-id made current
    timestamp_ms BIGINT NOT NULL        -- when it was made current, epoch ms
);
INSERT INTO activations SELECT DISTINCT view_id, version_id, timestamp_ms FROM version_log ORDER BY ALL;

-- derived: each distinct name of each view, for resolving names without reading every file's row.
CREATE TABLE view_names (
    view_id VARCHAR NOT NULL,           -- view_files.view_id
    catalog VARCHAR,                    -- view_files.catalog
    name VARCHAR[]                      -- view_files.name
);
INSERT INTO view_names SELECT DISTINCT view_id, catalog, name FROM view_files ORDER BY ALL;

DROP INDEX version_log_by_view;
DROP INDEX file_versions_by_hash;
CREATE INDEX activations_by_view ON activations (view_id);
CREATE INDEX versions_by_view ON versions (view_id);
CREATE INDEX representations_by_version ON representations (version_hash);
