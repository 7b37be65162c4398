-- 0025_audit_rows: the changes to each view, the findings that compare its files and the view that
-- took its place, derived with its spans (viewlineage.sinks.audit) instead of by every question. Activity and Health asked
-- `change_events` and `findings` of the whole store on every call: at 10^6 files `findings --counts`
-- ran out of its 2 GiB and `log-rewritten` alone took 17 s. Filled as a writer opens the store.
-- No index: a batch's re-derivation deletes its views' rows in one scan, and an index by view
-- would hold every key in memory (~100 MB at 10^6 changes).
CREATE TABLE view_changes (
    view_id VARCHAR NOT NULL,           -- view_files.view_id
    view VARCHAR,                       -- its latest name, dotted (path_name)
    catalog VARCHAR,                    -- its latest catalog
    namespace VARCHAR,                  -- its latest namespace, dotted (namespace_name)
    changed_ms BIGINT,                  -- when, epoch ms (NULL: a property-only commit of unknown time)
    kind VARCHAR NOT NULL,              -- created, first-known, replaced, rolled-back, property-only, dropped
    version_id INTEGER,                 -- the version made or kept current (NULL for dropped)
    previous_version_id INTEGER,        -- the one current before (for dropped: when dropped)
    sequence_number INTEGER,            -- the sequence number of the file whose commit made it
    changed_properties VARCHAR[],       -- the property keys the commit set, changed or removed
    property_summary VARCHAR,           -- 'properties a added; b changed; c removed'
    relisted BOOLEAN NOT NULL,          -- a drop a re-list found (reconcile): then or before
    engine VARCHAR,                     -- the version's engine_name
    dialects VARCHAR[]                  -- the version's representations' dialects, sorted
);

CREATE TABLE view_findings (
    scope VARCHAR NOT NULL,             -- 'file', 'view' or 'version', as in the findings view
    location VARCHAR,                   -- the file a 'file' finding is about
    view_id VARCHAR NOT NULL,           -- view_files.view_id
    version_id INTEGER,                 -- the version it is about, when one
    code VARCHAR NOT NULL,              -- stable finding code
    severity VARCHAR NOT NULL,          -- 'error', 'warning' or 'info'
    message VARCHAR NOT NULL,           -- readable detail
    position VARCHAR NOT NULL           -- JSON path in the document
);

CREATE TABLE view_replacements (
    view_id VARCHAR NOT NULL,           -- a view another view (another uuid) took the place of
    replaced_by VARCHAR NOT NULL,       -- that view: the first committed in its directory, under its name
    replaced_ms BIGINT NOT NULL         -- when: that view's first commit there, or its version's
                                        -- activation if earlier
);
