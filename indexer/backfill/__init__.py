"""`backfill`: whole warehouses through the pure stages (`stages.py`), on a local process pool
(`local.py`) or on Spark (`spark.py`), into a Parquet dataset and a store (`run.py`).

May import `pipeline`, `sources`, the pure rooms and the sinks; nothing of the followers.
"""
