"""The questions users ask of a store: point-in-time and impact queries (SQL first, `sql/`), the
CLI and the HTTP API.

The top of the flow: may import every room.
"""
