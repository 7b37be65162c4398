"""Where batches go: the store's schema (migrations, and the Arrow schemas and keys of its tables),
the DuckDB store and its readers, the spool shared by consumers, and Parquet datasets.

May import `viewlineage.indexer.errors`; nothing else of the indexer.
"""
