-- Which copy of a version counts, and when each version was active. Times are epoch ms. The
-- per-view macros (`view_*`) read one view's rows through the view_id indexes; the `*_as_of(t)`
-- ones answer for every view at once from the point-in-time index (`view_spans`: intervals the
-- store keeps up to date), or with one aggregate per table.

-- preferred_versions: one row per (view_id, version_id). Under a version conflict (one id, two
-- contents) the copy `preferred_copies` names: the one from the file with the highest sequence
-- number, then the greatest location.
CREATE OR REPLACE VIEW preferred_versions AS
SELECT v.* FROM versions v ANTI JOIN preferred_copies USING (view_id, version_id)
UNION ALL
SELECT v.* FROM versions v SEMI JOIN preferred_copies USING (version_hash);

-- file_state_key(commit_ms, sequence_number, location, survives, t): orders a view's files by
-- whose state holds at t, greatest first: the latest committed at or before t (ties: higher
-- sequence number, a file not removed (`survives`: a moved directory's copy of a removed file),
-- greater location); if none was committed yet, the earliest; files with no commit time last.
CREATE OR REPLACE MACRO file_state_key(commit_ms, sequence_number, location, survives, t) AS {
    'tier': CASE WHEN commit_ms <= t THEN 2 WHEN commit_ms > t THEN 1 ELSE 0 END,
    'commit': CASE WHEN commit_ms <= t THEN commit_ms ELSE -commit_ms END,
    'sequence': coalesce(sequence_number, -1),
    'survives': survives,
    'location': location
};

-- current_versions(t): per view, the version named by the log entry with the greatest timestamp <= t
-- (ties: the one the file logging them names current, else the greater version-id).
CREATE OR REPLACE MACRO current_versions(t) AS TABLE
SELECT view_id, version_id, activated_ms FROM view_spans
WHERE from_ms <= t AND t < until_ms AND version_id IS NOT NULL;

-- activation_settled(vid, version, ms): whether a file whose newest log entry is at ms names the
-- version current: of versions made current at one instant, that one is (else the greater id).
CREATE OR REPLACE MACRO activation_settled(vid, version, ms) AS EXISTS (
    SELECT 1 FROM view_files f WHERE f.view_id = vid AND f.last_log_ms = ms AND f.current_version_id = version
);

-- unsettled_partners(vid, version, ms): the other versions made current at ms, the instant `version`
-- was, when no file settles which came last: that `version` holds from then is the greater id's
-- guess, so every answer drawn from it says so.
CREATE OR REPLACE MACRO unsettled_partners(vid, version, ms) AS TABLE
SELECT DISTINCT a.version_id FROM activations a
WHERE a.view_id = vid AND a.timestamp_ms = ms AND a.version_id <> version
  AND NOT activation_settled(vid, version, ms);

-- view_activations(vid): the view's activations ranked latest first (`latest_first`), as they hold:
-- of versions made current at one instant, the one a file settles, else the greater id.
CREATE OR REPLACE MACRO view_activations(vid) AS TABLE
SELECT view_id, version_id, timestamp_ms,
       row_number() OVER (ORDER BY timestamp_ms DESC, activation_settled(vid, version_id, timestamp_ms) DESC,
                          version_id DESC) AS latest_first
FROM activations WHERE view_id = vid;

-- view_current_version(vid, t): the same as current_versions(t) for one view.
CREATE OR REPLACE MACRO view_current_version(vid, t) AS TABLE
SELECT view_id, version_id, timestamp_ms AS activated_ms FROM view_activations(vid)
WHERE timestamp_ms <= t ORDER BY latest_first LIMIT 1;

-- view_files_as_of(t): per view, the file whose state held at t (see file_state_key).
CREATE OR REPLACE MACRO view_files_as_of(t) AS TABLE
SELECT unnest(arg_max(f, file_state_key(f.commit_ms, f.sequence_number, f.location, true, t)))
FROM view_files f GROUP BY f.view_id;

-- placed_view_locations(vid): the view's files that can hold it: a copy elsewhere (its document's
-- location names another directory: the finding location-mismatch) never holds the view while a
-- file in place that was not removed does; once none is left (its directory moved), the copies
-- hold it, as they would for an index of the tree as it is now (the spans apply the same rule).
CREATE OR REPLACE MACRO placed_view_locations(vid) AS TABLE
WITH files AS (SELECT location FROM view_files WHERE view_id = vid),
misplaced AS (
    SELECT DISTINCT location FROM file_findings
    WHERE code = 'location-mismatch' AND location IN (SELECT location FROM files)
),
removed AS (SELECT DISTINCT location FROM removals WHERE location IN (SELECT location FROM files))
SELECT location FROM files
WHERE location NOT IN (SELECT location FROM misplaced)
   OR NOT EXISTS (
       SELECT 1 FROM files
       WHERE location NOT IN (SELECT location FROM misplaced) AND location NOT IN (SELECT location FROM removed));

-- copied_view_names(): the names (view_names rows) only copies of a view's files elsewhere give it,
-- while a file in place holds it (placed_view_locations): such a copy names no view. Copies are
-- rare, so they are found first.
CREATE OR REPLACE MACRO copied_view_names() AS TABLE
WITH misplaced AS MATERIALIZED (
    SELECT DISTINCT f.view_id, f.catalog, f.name, f.location
    FROM (SELECT DISTINCT location FROM file_findings WHERE code = 'location-mismatch') m
    JOIN view_files f USING (location)
),
in_place AS MATERIALIZED (  -- the other files of those views only
    SELECT f.view_id, f.catalog, f.name, f.location FROM view_files f
    WHERE f.view_id IN (SELECT view_id FROM misplaced) AND f.location NOT IN (SELECT location FROM misplaced)
),
held AS (  -- the views a file in place that was not removed holds
    SELECT DISTINCT view_id FROM in_place
    WHERE location NOT IN (SELECT location FROM removals WHERE location IN (SELECT location FROM in_place))
)
SELECT DISTINCT m.view_id, m.catalog, m.name FROM misplaced m
WHERE m.view_id IN (SELECT view_id FROM held)
  AND NOT EXISTS (
        SELECT 1 FROM in_place p
        WHERE p.view_id = m.view_id AND p.catalog IS NOT DISTINCT FROM m.catalog AND p.name = m.name);

-- view_location_as_of(vid, t): the location of the file whose state held at t for one view,
-- ranked on narrow columns so that only the one row it names is read in full.
CREATE OR REPLACE MACRO view_location_as_of(vid, t) AS (
    SELECT arg_max(location, file_state_key(
               commit_ms, sequence_number, location, location NOT IN (SELECT location FROM removals), t))
    FROM view_files WHERE view_id = vid AND location IN (SELECT location FROM placed_view_locations(vid))
);

-- view_file_as_of(vid, t): that file's row.
CREATE OR REPLACE MACRO view_file_as_of(vid, t) AS TABLE
SELECT * FROM view_files WHERE location = view_location_as_of(vid, t);

-- view_commits(vid): the view's files that can hold it, in the order their states took hold
-- (file_state_key's, files with no commit time first), each beside the one before: what each
-- commit changed (a version made current, properties set or removed, or only properties).
CREATE OR REPLACE MACRO view_commits(vid) AS TABLE
SELECT location, sequence_number, commit_ms, commit_source, current_version_id, properties,
       lag(current_version_id) OVER w AS previous_version_id,
       lag(properties) OVER w AS previous_properties
FROM view_files
WHERE view_id = vid AND location IN (SELECT location FROM placed_view_locations(vid))
WINDOW w AS (ORDER BY commit_ms NULLS FIRST, coalesce(sequence_number, -1), location)
ORDER BY commit_ms NULLS FIRST, coalesce(sequence_number, -1), location;

-- view_incarnations(vid): the other views (other uuids) that held one of its names, which come from
-- the directories their files sit in: a view dropped and created again at its path is a new view,
-- its history apart. Not the documents' own `location` fields: any file may write any there.
CREATE OR REPLACE MACRO view_incarnations(vid) AS TABLE
WITH mine AS (SELECT DISTINCT catalog, name FROM view_names WHERE view_id = vid),
others AS (
    SELECT DISTINCT n.view_id FROM view_names n SEMI JOIN mine m
        ON n.catalog IS NOT DISTINCT FROM m.catalog AND n.name = m.name
    WHERE n.view_id <> vid
)
SELECT f.view_id, arg_max(f.catalog, f.commit_ms) AS catalog, arg_max(f.name, f.commit_ms) AS name,
       min(f.commit_ms) AS first_commit_ms, max(f.commit_ms) AS last_commit_ms
FROM view_files f WHERE f.view_id IN (SELECT view_id FROM others)
GROUP BY f.view_id
ORDER BY first_commit_ms, f.view_id;

-- view_drop(vid): a view is dropped when its newest file (latest commit, then highest sequence
-- number) is removed; dropped_ms is the earliest removal reported for that file, or the file's
-- last version-log entry if that was later (see view_spans' drops); source, who reported that
-- removal (`reconcile`: a re-list found the file gone, so the drop came then or before).
CREATE OR REPLACE MACRO view_drop(vid) AS TABLE
SELECT vid AS view_id, r.location, greatest(min(r.removed_ms), any_value(f.last_log_ms)) AS dropped_ms,
       arg_min(r.source, r.removed_ms) AS source
FROM removals r JOIN view_files f USING (location)
WHERE r.location = view_location_as_of(vid, 1::BIGINT << 62) GROUP BY r.location;

-- replaced_views(): each view another view (another uuid) took the place of, when, and which
-- (`replaced_by`): the first commit of one in its directory, under its name, after the view's
-- newest file, or the activation of its version if earlier (a view dropped by a catalog that left
-- its older files, then created again at its path: the newest file holds the name, see
-- view_heads_as_of). Derived with the spans (`view_replacements`, viewlineage.sinks.audit).
CREATE OR REPLACE MACRO replaced_views() AS TABLE
SELECT view_id, replaced_by, replaced_ms FROM view_replacements;

-- view_at(vid, t): one view at t from its spans, through their view_id index: the file in force
-- (location, catalog, name_path, commit_ms, commit_source), the version current then
-- (active_version_id, activated_ms, and version_hash: the copy that counts; NULL before the first
-- activation) and, once its newest file (the last span's) was removed, which and when
-- (dropped_location, dropped_ms; see view_drop). No row for a view without files.
CREATE OR REPLACE MACRO view_at(vid, t) AS TABLE
WITH spans AS MATERIALIZED (
    -- One filter, on the indexed key; the time conditions then pick among the view's ~100 spans.
    SELECT view_id, from_ms, until_ms, location, view_uuid, catalog, name_path, commit_ms, commit_source,
           version_id, activated_ms, version_hash, dropped_ms
    FROM view_spans WHERE view_id = vid
)
SELECT s.view_id, s.location, s.view_uuid, s.catalog, s.name_path, s.commit_ms, s.commit_source,
       s.version_id AS active_version_id, s.activated_ms, s.version_hash,
       newest.location AS dropped_location, newest.dropped_ms
FROM spans s LEFT JOIN spans newest ON newest.until_ms = 9223372036854775807 AND newest.dropped_ms IS NOT NULL
WHERE s.from_ms <= t AND t < s.until_ms;

-- view_heads_as_of(t): every view current at t with its version (the copy that counts, and what
-- it reads, as `read_paths` and `reads`, see view_spans; what the current versions of files that
-- tie with its file in force read, as `tied_read_paths`) and the facts of its file in force (see
-- file_state_key). A name is held per metadata directory by the view whose file there was
-- committed last: a view dropped and re-created at the same path is replaced by the new uuid from
-- the new file's commit on, and two directories whose names differ only in case (names are
-- case-folded) are two views, each current. A view
-- whose file in force at t was removed by t is dropped and left out. One filtered scan of the
-- spans: a caller's unused columns are never read (the spans' locations and hashes are unique
-- strings, the costliest to decompress).
CREATE OR REPLACE MACRO view_heads_as_of(t) AS TABLE
SELECT view_id, view_uuid, catalog, string_split(name_path, chr(31)) AS name, version_id, activated_ms,
       location AS file_location, commit_ms, commit_source, version_hash, name_path, read_paths, reads,
       tied_read_paths
FROM view_spans
WHERE from_ms <= t AND t < until_ms AND version_id IS NOT NULL AND (dropped_ms IS NULL OR t < dropped_ms)
QUALIFY row_number() OVER (
    PARTITION BY catalog, name_path, directory_hash, CASE WHEN name_path IS NULL THEN view_id END
    ORDER BY commit_ms DESC, view_id) = 1;

-- views_as_of(t): view_heads_as_of(t) with the properties of each view's file in force.
CREATE OR REPLACE MACRO views_as_of(t) AS TABLE
SELECT h.* EXCLUDE (version_hash, name_path, read_paths, reads, tied_read_paths), f.properties
FROM view_heads_as_of(t) h JOIN view_files f ON f.location = h.file_location;

-- tied_files_of(ids, t): of the views `ids` (a list), those whose file in force at t ties with other
-- files of theirs (the same commit time and sequence number, none removed by t: a competing commit,
-- or the view's uuid in two directories), with those files: which one holds the view is then a guess
-- (the greater location), which every answer from it says.
CREATE OR REPLACE MACRO tied_files_of(ids, t) AS TABLE
WITH held AS (
    SELECT DISTINCT s.view_id, s.location FROM view_spans s
    WHERE s.view_id IN (SELECT unnest(ids)) AND s.from_ms <= t AND t < s.until_ms
)
SELECT held.view_id, list(f.location ORDER BY f.location) AS tied_files
FROM held JOIN view_files h ON h.location = held.location
JOIN view_files f ON f.view_id = held.view_id AND f.location <> h.location
 AND f.commit_ms IS NOT DISTINCT FROM h.commit_ms AND f.sequence_number IS NOT DISTINCT FROM h.sequence_number
WHERE f.location NOT IN (SELECT location FROM removals WHERE removed_ms <= t)
GROUP BY held.view_id;
