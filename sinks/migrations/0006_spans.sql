-- 0006_spans: point-in-time indexes. When each version was a view's current version, when each
-- file's state was in force, what each version reads, and which copy of a conflicting version
-- counts, kept up to date by the store with every
-- batch (viewlineage.sinks.spans). A question about every view at T then filters intervals
-- instead of ranking every file and log entry of every view, and reads one row of references per
-- current version instead of joining representations and their lineage. The store fills these
-- tables from the rows already there when it applies this migration.

-- derived: when each version was its view's current version: [from_ms, until_ms) between its
-- activation and the next one (activations ordered by time, then version-id).
CREATE TABLE version_spans (
    view_id VARCHAR NOT NULL,           -- view_files.view_id
    version_id INTEGER NOT NULL,        -- version-id made current
    from_ms BIGINT NOT NULL,            -- its activation, epoch ms
    until_ms BIGINT NOT NULL            -- the next activation of the view; 2^63-1 when none
);

-- derived: when each view file's state was in force: from its commit until the next file's (files
-- ordered by commit time, sequence number, location); the view's first file also before its commit.
CREATE TABLE file_spans (
    view_id VARCHAR NOT NULL,           -- view_files.view_id
    location VARCHAR NOT NULL,          -- view_files.location
    view_uuid VARCHAR,                  -- view_files.view_uuid
    catalog VARCHAR,                    -- view_files.catalog
    name VARCHAR[],                     -- view_files.name
    commit_ms BIGINT,                   -- view_files.commit_ms
    commit_source VARCHAR,              -- view_files.commit_source
    from_ms BIGINT NOT NULL,            -- in force from, epoch ms; -(2^63-1) for the first file
    until_ms BIGINT NOT NULL            -- until, epoch ms; 2^63-1 for the last file
);

-- derived: the tables each version reads: the union of its representations' references.
CREATE TABLE version_reads (
    version_hash VARCHAR NOT NULL,      -- versions.version_hash
    view_id VARCHAR NOT NULL,           -- versions.view_id
    version_id INTEGER NOT NULL,        -- versions.version_id
    reads STRUCT(catalog VARCHAR, namespace VARCHAR[], name VARCHAR, suffix VARCHAR, pin VARCHAR,
                 catalog_unknown BOOLEAN)[] NOT NULL -- distinct references (table_references, catalog_source = 'unknown' as a flag)
);

-- derived: under a version conflict (one version-id, two contents), the copy that counts: the one
-- listed by the file with the highest sequence number, then the greatest location. Only
-- conflicting versions have a row.
CREATE TABLE preferred_copies (
    view_id VARCHAR NOT NULL,           -- versions.view_id
    version_id INTEGER NOT NULL,        -- versions.version_id
    version_hash VARCHAR NOT NULL       -- versions.version_hash of the copy that counts
);
