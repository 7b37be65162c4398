-- 0014_stale_spans: views whose spans and preferred copies await derivation. A writer that nothing
-- reads while it runs (`index`, `reindex`, a backfill's merge) records here, in each batch's
-- transaction, the views the batch brought rows or removals for, and derives their spans before
-- anything can read them: before each replica's CHECKPOINT and when it closes. Re-deriving a
-- view's spans in every batch cost ~25-40 ms a transaction, a quarter of an `index` batch's. A
-- writer that stopped before deriving them leaves the views here: the next writer derives them as
-- it opens, and readers of the store file refuse it until then (viewlineage.sinks.spans).
CREATE TABLE _stale_spans (
    view_id VARCHAR NOT NULL            -- view_files.view_id, once each
);
