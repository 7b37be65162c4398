"""Python's cyclic garbage collector, paused while a batch is parsed and turned into rows."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """No cyclic collection inside the block. A batch's parsed files and rows all live until its
    tables are built, and parsing them leaves no cycles (`test_parsing_leaves_no_cyclic_garbage`),
    yet the collector walked them again each time they aged a generation: ~15% of parsing time,
    measured. Cycles a library does leave wait for the end of the block. SQL analysis is not run
    inside one: sqlglot's trees point to their parents."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
