-- 0009_view_spans: one point-in-time index per view instead of two. `version_spans` (when each
-- version was current) and `file_spans` (when each file's state was in force) are merged into
-- `view_spans`: the intervals over which both held, each carrying the current version's copy that
-- counts and what it reads. A question about every view at T (`views_as_of`, `uses`) then filters
-- one table and joins nothing: at 10^6 versions, joining the two spans and then every version's
-- reads was most of `uses`. Names and reads are plain text, not lists: a filtered scan decompresses
-- whole vectors of the columns it returns, and lists cost ~4x text there. The store fills it from
-- the rows already there when it applies this migration (viewlineage.sinks.spans).
DROP TABLE version_spans;
DROP TABLE file_spans;
-- The spans carry what migration 0008 added for `uses`.
ALTER TABLE version_reads DROP COLUMN read_names;
ALTER TABLE version_reads DROP COLUMN read_catalogs;

-- derived: a view's state over time, in intervals [from_ms, until_ms) that cover all time, split
-- wherever its file in force or its current version changes. The file in force: the latest
-- committed (ties: higher sequence number, then greater location; the view's first file also
-- before its commit). The current version: the latest activation (ties: the greater version-id);
-- NULL before the first.
CREATE TABLE view_spans (
    view_id VARCHAR NOT NULL,           -- view_files.view_id
    from_ms BIGINT NOT NULL,            -- epoch ms; -(2^63-1) for the first interval
    until_ms BIGINT NOT NULL,           -- epoch ms; 2^63-1 for the last
    location VARCHAR NOT NULL,          -- the file in force: view_files.location
    view_uuid VARCHAR,                  -- view_files.view_uuid
    catalog VARCHAR,                    -- view_files.catalog
    name_path VARCHAR,                  -- view_files.name: namespace levels and name joined by chr(31)
    commit_ms BIGINT,                   -- view_files.commit_ms
    commit_source VARCHAR,              -- view_files.commit_source
    version_id INTEGER,                 -- the current version; NULL before the first activation
    activated_ms BIGINT,                -- when it was made current, epoch ms
    version_hash VARCHAR,               -- the copy that counts (preferred_copies); NULL if not stored
    read_paths VARCHAR                  -- what that copy reads (version_reads), one entry per reference:
                                        -- catalog ('' when unknown), chr(29), namespace levels and
                                        -- name joined by chr(31); entries joined by chr(30); NULL
                                        -- when it reads nothing or is not stored
);
