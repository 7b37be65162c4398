"""Bytes of one metadata file -> `ParsedFile`: gzip detection, classification, views, tables and
materialized views; locations and the names derived from them. Pure functions of (bytes, location,
`ParseConfig`), shared by `index`, the followers, the backfill engines and the tests.

May import `spec`, `lineage` (dialect names and `LineageConfig`) and `errors`; no I/O.
"""
