-- 0002_lookup_indexes: point-in-time queries look up one view's files and log entries.
CREATE INDEX view_files_by_view ON view_files (view_id);
CREATE INDEX version_log_by_view ON version_log (view_id);
CREATE INDEX file_versions_by_hash ON file_versions (version_hash);
