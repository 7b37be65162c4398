"""The indexer: metadata files in, Arrow batches out to the sinks. Its rooms follow the data:

    sources/    where bytes and events come from: listing and reading files, S3 notifications
    spec/       pydantic models of the view, table and MV formats; validation; rules; findings
    parse/      bytes -> `ParsedFile` (views, tables, MVs); locations and names        (pure)
    lineage/    SQL -> tables read, columns used; dialect names                         (pure)
    pipeline/   the indexing loop: parse, lineage, Arrow rows, worker pool, store thread, health
    followers/  `watch` and `consume`: sources followed into the pipeline, for good
    backfill/   `backfill`: whole warehouses through the pure stages, locally or on Spark

and three modules every room may use: `errors` (the exception tree), `config` (settings, the
boundary that derives each pure room's own frozen config) and `faults` (crash points for tests).
Imports run one way, checked by the import contracts in `pyproject.toml`: the pure rooms import no
I/O and nothing of the rooms that do; no two rooms import each other.
"""
