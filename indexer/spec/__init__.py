"""The formats as their specs define them: pydantic models of Iceberg view, table and
materialized-view metadata (one class per spec object), element-wise validation, the rules a
document can break and the findings that record them.

Pure: imports pydantic, orjson (content hashes) and the standard library, and no other room.
"""
