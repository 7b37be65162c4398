-- 0001_initial: the store. Source tables keep what was read; derived tables are rebuilt from
-- raw_documents by `viewlineage reindex`. Columns marked (bookkeeping) differ between two runs that
-- index the same files and are left out when stores are compared.

-- source: one row per distinct decompressed metadata document.
CREATE TABLE raw_documents (
    content_hash VARCHAR PRIMARY KEY,   -- blake2b-128 of the decompressed document
    document BLOB NOT NULL,             -- the document, gzip-compressed
    document_bytes BIGINT NOT NULL      -- decompressed size in bytes
);

-- source: one row per metadata file location that was read and indexed (view or table).
CREATE TABLE files (
    location VARCHAR PRIMARY KEY,       -- normalised location: s3://bucket/key or an absolute path
    content_hash VARCHAR NOT NULL,      -- raw_documents.content_hash of its document
    kind VARCHAR NOT NULL,              -- 'view' or 'table'
    stored_bytes BIGINT NOT NULL,       -- size as stored (gzip-compressed when gzip)
    gzip BOOLEAN NOT NULL,              -- whether the stored bytes were gzip
    sequence_number BIGINT,             -- from the file name (00042-... or v42.); NULL when absent
    modified_ms BIGINT,                 -- object LastModified or file mtime, epoch ms
    modified_source VARCHAR,            -- 'last-modified' or 'mtime'
    ingested_at TIMESTAMPTZ NOT NULL    -- (bookkeeping) when this location was first indexed
);

-- source: files that cannot be indexed at all, with the reason. A later good read of the same
-- location deletes its row.
CREATE TABLE quarantine (
    location VARCHAR PRIMARY KEY,       -- normalised location
    reason VARCHAR NOT NULL,            -- stable code: not-json, not-object, not-metadata, no-identity, truncated-gzip, over-size-limit, over-decompressed-limit
    message VARCHAR NOT NULL,           -- readable detail
    stored_bytes BIGINT,                -- size as stored, when known
    modified_ms BIGINT,                 -- object LastModified or file mtime, epoch ms, when known
    quarantined_at TIMESTAMPTZ NOT NULL -- (bookkeeping) when it was quarantined
);

-- source: every root path given to index or watch. A root no --catalog-map entry covers names
-- its views relative to itself; reindex needs the same roots to give the same names.
CREATE TABLE index_roots (
    prefix VARCHAR PRIMARY KEY          -- normalised location
);

-- derived: one row per view metadata file.
CREATE TABLE view_files (
    location VARCHAR PRIMARY KEY,       -- files.location
    view_id VARCHAR NOT NULL,           -- view-uuid (lower-case), or 'loc:<location>' when the file has none
    view_uuid VARCHAR,                  -- view-uuid as found, NULL when missing
    catalog VARCHAR,                    -- catalog from the matching --catalog-map entry, NULL when none
    name VARCHAR[],                     -- namespace levels then view name, relative to the catalog-map prefix
    metadata_location VARCHAR,          -- the document's `location` field
    format_version INTEGER,             -- the document's format-version
    current_version_id INTEGER,         -- the document's current-version-id
    properties MAP(VARCHAR, VARCHAR),   -- the document's properties
    sequence_number BIGINT,             -- files.sequence_number
    commit_ms BIGINT,                   -- when this file's state took effect: max(modified_ms, newest log entry)
    commit_source VARCHAR,              -- 'last-modified', 'mtime' or 'version-log': where commit_ms came from
    last_log_ms BIGINT,                 -- timestamp of the newest version-log entry
    last_log_version_id INTEGER         -- version-id of the newest version-log entry
);

-- derived: one row per table metadata file (their contents are indexed by a later migration).
CREATE TABLE table_files (
    location VARCHAR PRIMARY KEY,       -- files.location
    table_uuid VARCHAR,                 -- table-uuid, lower-case
    table_location VARCHAR,             -- the document's `location`
    format_version INTEGER              -- the document's format-version
);

-- derived: one row per distinct content of a view version. Two rows with one (view_id,
-- version_id) are a version conflict; queries prefer the copy in the file with the highest
-- sequence number, then the greatest location.
CREATE TABLE versions (
    version_hash VARCHAR PRIMARY KEY,   -- digest of (view_id, version object, its schema)
    view_id VARCHAR NOT NULL,           -- view_files.view_id
    version_id INTEGER NOT NULL,        -- version-id
    timestamp_ms BIGINT NOT NULL,       -- the version's timestamp-ms (creation, not activation)
    schema_id INTEGER NOT NULL,         -- schema-id
    schema_hash VARCHAR,                -- schemas.schema_hash; NULL when schema-not-found
    default_catalog VARCHAR,            -- default-catalog
    default_namespace VARCHAR[] NOT NULL, -- default-namespace levels
    summary MAP(VARCHAR, VARCHAR),      -- summary
    engine_name VARCHAR,                -- summary engine-name
    engine_version VARCHAR              -- summary engine-version (or legacy engineVersion)
);

-- derived: which versions each view file lists.
CREATE TABLE file_versions (
    location VARCHAR NOT NULL,          -- view_files.location
    ordinal INTEGER NOT NULL,           -- position in the file's versions list
    version_id INTEGER NOT NULL,        -- versions.version_id
    version_hash VARCHAR NOT NULL,      -- versions.version_hash
    PRIMARY KEY (location, ordinal)
);

-- derived: every version-log entry of every file. The union over a view's files is its
-- activation history: rollbacks re-activate, expired versions stay answerable.
CREATE TABLE version_log (
    location VARCHAR NOT NULL,          -- view_files.location
    ordinal INTEGER NOT NULL,           -- position in the file's version-log
    view_id VARCHAR NOT NULL,           -- view_files.view_id
    version_id INTEGER NOT NULL,        -- version-id made current
    timestamp_ms BIGINT NOT NULL,       -- when it was made current, epoch ms
    PRIMARY KEY (location, ordinal)
);

-- derived: one row per distinct schema.
CREATE TABLE schemas (
    schema_hash VARCHAR PRIMARY KEY,    -- digest of the schema object
    schema_id INTEGER NOT NULL,         -- schema-id
    columns STRUCT(id INTEGER, name VARCHAR, type VARCHAR, required BOOLEAN, doc VARCHAR)[] NOT NULL -- top-level fields; nested types as JSON text
);

-- derived: the representations of each version.
CREATE TABLE representations (
    version_hash VARCHAR NOT NULL,      -- versions.version_hash
    ordinal INTEGER NOT NULL,           -- position in the version's representations
    type VARCHAR NOT NULL,              -- 'sql', or an unknown type kept as found
    dialect_raw VARCHAR,                -- dialect as written
    dialect VARCHAR,                    -- canonical sqlglot dialect; NULL when unknown
    sql VARCHAR,                        -- the SQL text
    document VARCHAR NOT NULL,          -- the representation object as JSON
    lineage_key VARCHAR,                -- lineage.lineage_key; NULL when no lineage could be computed
    PRIMARY KEY (version_hash, ordinal)
);

-- derived: memo of lineage results, keyed by everything lineage depends on.
CREATE TABLE lineage (
    lineage_key VARCHAR PRIMARY KEY,    -- digest of (rules version, config, dialect, defaults, view catalog, SQL)
    rules_version INTEGER NOT NULL,     -- lineage rules version that computed it
    dialect VARCHAR NOT NULL,           -- canonical dialect
    computed_at TIMESTAMPTZ NOT NULL    -- (bookkeeping) when it was computed
);

-- derived: the tables each lineage result reads.
CREATE TABLE table_references (
    lineage_key VARCHAR NOT NULL,       -- lineage.lineage_key
    ordinal INTEGER NOT NULL,           -- position in the sorted references
    catalog VARCHAR,                    -- resolved catalog; NULL when catalog-unknown
    namespace VARCHAR[] NOT NULL,       -- resolved namespace levels
    name VARCHAR NOT NULL,              -- table (or view) name
    suffix VARCHAR,                     -- Iceberg metadata table read, e.g. 'snapshots'
    pin VARCHAR,                        -- branch, tag or time-travel clause
    catalog_source VARCHAR NOT NULL,    -- 'explicit', 'default-catalog', 'catalog-map' or 'unknown'
    raw VARCHAR NOT NULL,               -- the reference as written (case-folded per dialect)
    PRIMARY KEY (lineage_key, ordinal)
);

-- derived: findings of lineage (sql-parse-error, unknown-dialect, catalog-unknown, ...).
CREATE TABLE lineage_findings (
    lineage_key VARCHAR NOT NULL,       -- lineage.lineage_key
    ordinal INTEGER NOT NULL,           -- position
    code VARCHAR NOT NULL,              -- stable finding code
    severity VARCHAR NOT NULL,          -- 'error', 'warning' or 'info'
    message VARCHAR NOT NULL,           -- readable detail
    position VARCHAR NOT NULL,          -- 'line:col' in the SQL, when known
    PRIMARY KEY (lineage_key, ordinal)
);

-- derived: findings of each file's document.
CREATE TABLE file_findings (
    location VARCHAR NOT NULL,          -- files.location
    ordinal INTEGER NOT NULL,           -- position
    code VARCHAR NOT NULL,              -- stable finding code
    severity VARCHAR NOT NULL,          -- 'error', 'warning' or 'info'
    message VARCHAR NOT NULL,           -- readable detail
    path VARCHAR NOT NULL,              -- JSON path in the document
    PRIMARY KEY (location, ordinal)
);
