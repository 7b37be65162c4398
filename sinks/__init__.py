"""Where batches go: the store's schema (migrations, and the Arrow schemas and keys of its tables),
the DuckDB store and its readers, the spool shared by consumers, and Parquet datasets.

May import `viewlineage.indexer.errors` and nothing else of the indexer, nor any module of the
queries: it reads only their SQL files (`queries/sql/`), to install them as the store's views and
macros with its schema, so that every store carries its questions.
"""
