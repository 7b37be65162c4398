-- 0007_tables_and_materialized_views: what table metadata files hold (table spec v1-v3: identity,
-- schemas with every nested field, snapshots, refs, logs) and what materialized views record (their
-- storage tables, each refresh and the base-table snapshots it read), in the four formats that
-- `viewlineage.indexer.parse.materialized_view` reads. Table files and schemas indexed before this migration have
-- none of these rows: `viewlineage reindex` derives them from the stored documents.
-- requires: reindex

DROP TABLE table_files;

-- derived: one row per table metadata file.
CREATE TABLE table_files (
    location VARCHAR PRIMARY KEY,       -- files.location
    table_id VARCHAR NOT NULL,          -- table-uuid (lower-case), or 'loc:<location>' when the file has none
    table_uuid VARCHAR,                 -- table-uuid as found, lower-case; NULL when missing
    catalog VARCHAR,                    -- catalog from the matching --catalog-map entry, NULL when none
    name VARCHAR[],                     -- namespace levels then table name, relative to the catalog-map prefix
    table_location VARCHAR,             -- the document's `location`
    format_version INTEGER,             -- 1, 2 or 3
    last_sequence_number BIGINT,        -- last-sequence-number (v2+)
    last_updated_ms BIGINT,             -- last-updated-ms
    last_column_id INTEGER,             -- last-column-id
    current_schema_id INTEGER,          -- current-schema-id (v1: the one schema's id)
    current_schema_hash VARCHAR,        -- schemas.schema_hash of the current schema
    current_snapshot_id BIGINT,         -- current-snapshot-id; NULL when none (absent or -1)
    properties MAP(VARCHAR, VARCHAR),   -- the document's properties
    sequence_number BIGINT,             -- files.sequence_number
    commit_ms BIGINT,                   -- when this file's state took effect: max(modified_ms, last-updated-ms)
    commit_source VARCHAR,              -- 'last-modified', 'mtime' or 'last-updated-ms'
    current_refresh_hash VARCHAR        -- MV format 1: mv_refreshes row its properties name current
);
CREATE INDEX table_files_by_table ON table_files (table_id);

-- derived: every (table, catalog, name) a table's files were found under.
CREATE TABLE table_names (
    table_id VARCHAR NOT NULL,          -- table_files.table_id
    catalog VARCHAR,                    -- table_files.catalog
    name VARCHAR[]                      -- table_files.name
);

-- derived: every schema each table has listed, by schema-id.
CREATE TABLE table_schemas (
    table_id VARCHAR NOT NULL,          -- table_files.table_id
    schema_id INTEGER NOT NULL,         -- schema-id
    schema_hash VARCHAR NOT NULL        -- schemas.schema_hash
);

-- derived: every field of every schema (views' and tables'), at any depth.
CREATE TABLE schema_fields (
    schema_hash VARCHAR NOT NULL,       -- schemas.schema_hash
    field_id INTEGER NOT NULL,          -- field id (list element-id, map key-id and value-id included)
    parent_id INTEGER,                  -- the enclosing struct, list or map field; NULL at top level
    path VARCHAR[] NOT NULL,            -- names from the top-level column down ('element', 'key', 'value' inside lists and maps)
    type VARCHAR NOT NULL,              -- primitive type name, or 'struct', 'list', 'map'
    required BOOLEAN NOT NULL,          -- required (list elements: element-required, map values: value-required)
    doc VARCHAR                         -- doc
);

-- derived: one row per distinct content of a table snapshot.
CREATE TABLE snapshots (
    snapshot_hash VARCHAR PRIMARY KEY,  -- digest of (table_id, snapshot object)
    table_id VARCHAR NOT NULL,          -- table_files.table_id
    snapshot_id BIGINT NOT NULL,        -- snapshot-id
    parent_snapshot_id BIGINT,          -- parent-snapshot-id
    sequence_number BIGINT,             -- sequence-number (v2+)
    timestamp_ms BIGINT NOT NULL,       -- timestamp-ms
    operation VARCHAR,                  -- summary operation: append, replace, overwrite, delete
    summary MAP(VARCHAR, VARCHAR),      -- summary
    schema_id INTEGER,                  -- schema-id
    manifest_list VARCHAR,              -- manifest-list
    first_row_id BIGINT,                -- first-row-id (v3)
    added_rows BIGINT                   -- added-rows (v3)
);
CREATE INDEX snapshots_by_table ON snapshots (table_id);

-- derived: the union of every file's snapshot-log: when each snapshot became the current one.
CREATE TABLE snapshot_log (
    table_id VARCHAR NOT NULL,          -- table_files.table_id
    snapshot_id BIGINT NOT NULL,        -- snapshot made current
    timestamp_ms BIGINT NOT NULL        -- when, epoch ms
);

-- derived: the union of every file's metadata-log: the metadata files each table replaced.
CREATE TABLE metadata_log (
    table_id VARCHAR NOT NULL,          -- table_files.table_id
    metadata_file VARCHAR NOT NULL,     -- metadata-file, as written
    timestamp_ms BIGINT NOT NULL        -- timestamp-ms
);

-- derived: each table file's refs; a 'main' branch at the current snapshot when a file names none.
CREATE TABLE table_refs (
    location VARCHAR NOT NULL,          -- table_files.location
    name VARCHAR NOT NULL,              -- ref name
    type VARCHAR NOT NULL,              -- 'branch' or 'tag'
    snapshot_id BIGINT NOT NULL,        -- snapshot-id
    min_snapshots_to_keep INTEGER,      -- min-snapshots-to-keep
    max_snapshot_age_ms BIGINT,         -- max-snapshot-age-ms
    max_ref_age_ms BIGINT               -- max-ref-age-ms
);

-- derived: MV format 2 (Iceberg MV spec draft): the storage table of a view version.
CREATE TABLE version_storage_tables (
    version_hash VARCHAR NOT NULL,      -- versions.version_hash
    catalog VARCHAR,                    -- storage-table catalog; NULL: the view's
    namespace VARCHAR[] NOT NULL,       -- storage-table namespace
    name VARCHAR NOT NULL               -- storage-table name
);

-- derived: MV formats 1 and 4: a view file's properties declaring the view materialized.
CREATE TABLE mv_definitions (
    location VARCHAR NOT NULL,          -- view_files.location
    format VARCHAR NOT NULL,            -- 'mv-properties' (1) or 'presto' (4)
    storage_table_location VARCHAR,     -- format 1: storage-table-location
    allow_stale_data BOOLEAN,           -- format 1: allow-stale-data (reported, not enforced)
    refresh_strategy VARCHAR,           -- format 1: refresh-strategy
    refresh_hash VARCHAR,               -- format 4: mv_refreshes row its properties record
    document VARCHAR NOT NULL           -- the MV properties as found (JSON)
);

-- derived: one row per distinct refresh recorded by a storage table (formats 1-3) or an MV's
-- properties (format 4).
CREATE TABLE mv_refreshes (
    refresh_hash VARCHAR PRIMARY KEY,   -- digest of (owner, format, snapshot, record)
    format VARCHAR NOT NULL,            -- 'mv-properties', 'refresh-state', 'trino' or 'presto'
    owner_id VARCHAR NOT NULL,          -- the storage table's table_id (formats 1-3), the view_id (4)
    refresh_id VARCHAR,                 -- format 1: refresh-id
    snapshot_id BIGINT,                 -- formats 2, 3: the storage-table snapshot that recorded it
    view_version_id INTEGER,            -- formats 1, 2: the MV version refreshed
    sequence_number BIGINT,             -- format 1: sequence-number
    refreshed_ms BIGINT,                -- refresh-start-timestamp-ms (2), trino-query-start-time (3); NULL: its files' commit
    unknown_reason VARCHAR,             -- why its base tables cannot be checked (Trino UNKNOWN, table functions)
    document VARCHAR NOT NULL           -- the record as found (JSON)
);

-- derived: the base tables and views each refresh read, with the snapshot or version it read.
CREATE TABLE mv_refresh_sources (
    refresh_hash VARCHAR NOT NULL,      -- mv_refreshes.refresh_hash
    ordinal INTEGER NOT NULL,           -- position in the record
    kind VARCHAR NOT NULL,              -- 'table' (Iceberg), 'view', 'delta-table'
    identifier VARCHAR NOT NULL,        -- as recorded
    catalog VARCHAR,                    -- recorded catalog; NULL: the MV's
    namespace VARCHAR[] NOT NULL,       -- namespace levels, from the record or its identifier
    name VARCHAR NOT NULL,              -- table or view name
    uuid VARCHAR,                       -- table-uuid or view-uuid (format 2)
    location VARCHAR,                   -- table location (format 1 filesystem tables)
    snapshot_id BIGINT,                 -- the snapshot read (Iceberg tables)
    ref VARCHAR,                        -- the ref read; NULL: main
    view_version_id INTEGER,            -- the version read (views)
    delta_version BIGINT,               -- the Delta table version read
    properties MAP(VARCHAR, VARCHAR)    -- format 1: the base table's properties
);
