-- 0012_reads_in_spans: the spans carry what their version reads, and `version_reads` is gone.
-- Keyed by random content hashes, its index (migration 0011) was ~68 MiB at 10^6 versions, and
-- DuckDB keeps the parts of a key index a transaction touched in memory: a batch's writes touched
-- most of it. What a version reads never changes once derived, so a batch that re-derives a view's
-- spans takes the reads from the spans it replaces, and looks up only those of versions new to them
-- (viewlineage.sinks.spans). The store fills the column from the rows already there when it applies
-- this migration.
DROP TABLE version_reads;
ALTER TABLE view_spans ADD COLUMN reads STRUCT(catalog VARCHAR, namespace VARCHAR[], name VARCHAR,
    suffix VARCHAR, pin VARCHAR, catalog_unknown BOOLEAN)[]; -- what the copy reads (lineage.reads of its representations, distinct, sorted); NULL when not stored
