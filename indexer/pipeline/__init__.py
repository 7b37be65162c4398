"""The indexing loop: file reads -> parse -> lineage (memoised) -> Arrow rows -> store, with its
worker pool, parallel reads, store thread and health; the `index` and `reindex` runs.

May import the pure rooms, `sources`, `config`, `faults`, `errors` and the sinks; nothing of the
followers or the backfill.
"""
