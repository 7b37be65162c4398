-- 0024_moved_locations: a file whose document's location names another root, with the same
-- namespace and name (a tree moved or copied whole), is `location-moved`, no longer
-- `location-mismatch`: it holds its view as a file in place does, so a file copied into another
-- view's directory of such a tree no longer takes that view's name (found by the nineteenth
-- adversarial trial). The spans of views with such files are derived again as a writer opens the
-- store.
UPDATE file_findings ff
SET code = 'location-moved', severity = 'info',
    message = 'location ''' || f.document || ''' names another root than the file''s directory '''
              || f.directory || ''', with the same namespace and name: the tree was moved or copied whole'
FROM (
    SELECT location, document, regexp_replace(location, '/[^/]*$', '') AS directory
    FROM (SELECT location, metadata_location AS document FROM view_files
          UNION ALL SELECT location, table_location FROM table_files)
    WHERE document IS NOT NULL
) f
WHERE ff.location = f.location AND ff.code = 'location-mismatch'
  AND string_split(f.directory, '/')[-3:] = string_split(rtrim(f.document, '/') || '/metadata', '/')[-3:];

INSERT INTO _stale_spans
SELECT DISTINCT view_id FROM view_files
WHERE location IN (SELECT location FROM file_findings WHERE code = 'location-moved')
  AND view_id NOT IN (SELECT view_id FROM _stale_spans);
