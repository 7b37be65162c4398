-- 0004_child_rows_without_keys: a child row (a file's versions, log entries and findings, a
-- version's representations, a lineage result's references and findings) is written once, in the
-- transaction that writes its parent row, so its key is unique by construction and needs no
-- constraint. Enforced keys kept an in-memory index of every child row: at 10^6 files, 10^7 rows
-- per table, more memory and insert time than the rows themselves. The logical keys are listed in
-- viewlineage.sinks.tables.PRIMARY_KEYS.
DROP INDEX file_versions_by_hash;
DROP INDEX version_log_by_view;

CREATE TABLE file_versions_unkeyed (
    location VARCHAR NOT NULL,          -- view_files.location
    ordinal INTEGER NOT NULL,           -- position in the file's versions list
    version_id INTEGER NOT NULL,        -- versions.version_id
    version_hash VARCHAR NOT NULL       -- versions.version_hash
);
INSERT INTO file_versions_unkeyed SELECT * FROM file_versions;
DROP TABLE file_versions;
ALTER TABLE file_versions_unkeyed RENAME TO file_versions;

CREATE TABLE version_log_unkeyed (
    location VARCHAR NOT NULL,          -- view_files.location
    ordinal INTEGER NOT NULL,           -- position in the file's version-log
    view_id VARCHAR NOT NULL,           -- view_files.view_id
    version_id INTEGER NOT NULL,        -- version-id made current
    timestamp_ms BIGINT NOT NULL        -- when it was made current, epoch ms
);
INSERT INTO version_log_unkeyed SELECT * FROM version_log;
DROP TABLE version_log;
ALTER TABLE version_log_unkeyed RENAME TO version_log;

CREATE TABLE representations_unkeyed (
    version_hash VARCHAR NOT NULL,      -- versions.version_hash
    ordinal INTEGER NOT NULL,           -- position in the version's representations
    type VARCHAR NOT NULL,              -- 'sql', or an unknown type kept as found
    dialect_raw VARCHAR,                -- dialect as written
    dialect VARCHAR,                    -- canonical sqlglot dialect; NULL when unknown
    sql VARCHAR,                        -- the SQL text
    document VARCHAR NOT NULL,          -- the representation object as JSON
    lineage_key VARCHAR                 -- lineage.lineage_key; NULL when no lineage could be computed
);
INSERT INTO representations_unkeyed SELECT * FROM representations;
DROP TABLE representations;
ALTER TABLE representations_unkeyed RENAME TO representations;

CREATE TABLE table_references_unkeyed (
    lineage_key VARCHAR NOT NULL,       -- lineage.lineage_key
    ordinal INTEGER NOT NULL,           -- position in the sorted references
    catalog VARCHAR,                    -- resolved catalog; NULL when catalog-unknown
    namespace VARCHAR[] NOT NULL,       -- resolved namespace levels
    name VARCHAR NOT NULL,              -- table (or view) name
    suffix VARCHAR,                     -- Iceberg metadata table read, e.g. 'snapshots'
    pin VARCHAR,                        -- branch, tag or time-travel clause
    catalog_source VARCHAR NOT NULL,    -- 'explicit', 'default-catalog', 'catalog-map' or 'unknown'
    raw VARCHAR NOT NULL                -- the reference as written (case-folded per dialect)
);
INSERT INTO table_references_unkeyed SELECT * FROM table_references;
DROP TABLE table_references;
ALTER TABLE table_references_unkeyed RENAME TO table_references;

CREATE TABLE lineage_findings_unkeyed (
    lineage_key VARCHAR NOT NULL,       -- lineage.lineage_key
    ordinal INTEGER NOT NULL,           -- position
    code VARCHAR NOT NULL,              -- stable finding code
    severity VARCHAR NOT NULL,          -- 'error', 'warning' or 'info'
    message VARCHAR NOT NULL,           -- readable detail
    position VARCHAR NOT NULL           -- 'line:col' in the SQL, when known
);
INSERT INTO lineage_findings_unkeyed SELECT * FROM lineage_findings;
DROP TABLE lineage_findings;
ALTER TABLE lineage_findings_unkeyed RENAME TO lineage_findings;

CREATE TABLE file_findings_unkeyed (
    location VARCHAR NOT NULL,          -- files.location
    ordinal INTEGER NOT NULL,           -- position
    code VARCHAR NOT NULL,              -- stable finding code
    severity VARCHAR NOT NULL,          -- 'error', 'warning' or 'info'
    message VARCHAR NOT NULL,           -- readable detail
    path VARCHAR NOT NULL               -- JSON path in the document
);
INSERT INTO file_findings_unkeyed SELECT * FROM file_findings;
DROP TABLE file_findings;
ALTER TABLE file_findings_unkeyed RENAME TO file_findings;

CREATE INDEX file_versions_by_hash ON file_versions (version_hash);
CREATE INDEX version_log_by_view ON version_log (view_id);
