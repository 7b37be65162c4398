"""SQL of one representation -> the tables it reads (`tables.py`) and the columns it uses
(`columns.py`), through sqlglot; dialect names as writers spell them (`dialects.py`). Pure functions
of (SQL, dialect, the version's defaults, `LineageConfig`).

May import `spec.findings`, sqlglot and the standard library; no I/O.
"""
