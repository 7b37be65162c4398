-- 0017_spans_by_directory: a view's name is held per metadata directory. Names are case-folded, so
-- `db/Orders` and `db/orders` (two views in a case-sensitive catalog) had one name, and the view
-- whose file came last hid the other from every question about all views at T: `uses` left out a
-- view that read the table. Each directory now holds its own; a view dropped and re-created at the
-- same path is still replaced by the new uuid. A hash, as partitions read it for every span in force
-- at T: locations are unique strings, the costliest column to decompress. The store fills it from
-- the rows already there when it applies this migration (viewlineage.sinks.spans).
ALTER TABLE view_spans ADD COLUMN directory_hash UBIGINT;  -- hash of the file's view directory (its location without `/metadata/<file>`)
