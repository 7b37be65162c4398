-- 0011_reads_by_key: what a batch derives, it finds by key. Every batch derives the reads of the
-- versions it brings and the spans of the views it touches (viewlineage.sinks.spans); doing so
-- joined the whole of `table_references` and `version_reads`, whose rows have no index, so a
-- follower's transaction of 12 files cost ~0.6 s at 10^6 versions, nearly all of it those scans.
-- Each lineage result now carries its distinct references in one row (found through the lineage
-- key), and `version_reads` is indexed by version hash.
ALTER TABLE lineage ADD COLUMN reads STRUCT(catalog VARCHAR, namespace VARCHAR[], name VARCHAR,
    suffix VARCHAR, pin VARCHAR, catalog_unknown BOOLEAN)[]; -- distinct table_references with a name (catalog_source = 'unknown' as a flag), in this order; [] when none
UPDATE lineage SET reads = coalesce(found.reads, [])
FROM (
    SELECT lineage_key, list({
        'catalog': catalog, 'namespace': namespace, 'name': name, 'suffix': suffix, 'pin': pin,
        'catalog_unknown': catalog_unknown} ORDER BY catalog NULLS FIRST, namespace, name,
        suffix NULLS FIRST, pin NULLS FIRST, catalog_unknown) AS reads
    FROM (
        SELECT DISTINCT lineage_key, catalog, namespace, name, suffix, pin,
               catalog_source = 'unknown' AS catalog_unknown
        FROM table_references WHERE name IS NOT NULL
    )
    GROUP BY lineage_key
) found
WHERE lineage.lineage_key = found.lineage_key;
UPDATE lineage SET reads = [] WHERE reads IS NULL;
CREATE INDEX version_reads_by_hash ON version_reads (version_hash);
