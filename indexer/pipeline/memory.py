"""The most memory an indexing process can hold under its settings, by part, and what the machine
(or its container) has: the README's "Memory" section states the same bound.

Each factor is measured (`tests/test_memory.py`, BENCHMARKS.md): parsing one document peaks at
3x its decompressed size (the document, orjson's working copy and the values it makes), plus ~64
bytes per value (`max-json-values` bounds their count: `[]` is 2 bytes of text, 56 as a list); a batch
closes once its documents reach `batch_bytes`, so it holds at most that plus one document; DuckDB
holds the rows of a transaction twice, and twice more while COMMIT writes its log.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from viewlineage.indexer.config import Settings
from viewlineage.indexer.parse.config import MiB

FIXED_BYTES = 256 * MiB
"""The interpreter, its libraries, DuckDB's caches and the read threads, with no file in hand."""
PARSE_FACTOR = 3
VALUE_BYTES = 64
"""A parsed JSON value as a Python object, whatever its size in the text."""
BATCHES_IN_HAND = 3
"""With workers, one batch is analysed, one waits for the store and one is written."""
STORE_FACTOR = 4


@dataclass(frozen=True, slots=True)
class MemoryBound:
    """Bytes by part."""

    fixed: int
    reads: int
    """Files read ahead: `batch_bytes` of them, and one more."""
    parsing: int
    """One document per parsing process: 3x its text, and its values as Python objects."""
    batches: int
    """Arrow rows of the batches in hand."""
    store: int
    """DuckDB's copies of the batch it writes."""

    @property
    def total(self) -> int:
        return self.fixed + self.reads + self.parsing + self.batches + self.store


def memory_bound(settings: Settings) -> MemoryBound:
    batch = settings.batch_bytes + settings.max_decompressed_bytes
    parsers = settings.worker_count if settings.worker_count > 1 else 1
    return MemoryBound(
        fixed=FIXED_BYTES,
        reads=settings.batch_bytes + settings.max_file_bytes,
        parsing=parsers
        * (PARSE_FACTOR * settings.max_decompressed_bytes + VALUE_BYTES * settings.max_json_values),
        batches=BATCHES_IN_HAND * batch,
        store=STORE_FACTOR * batch,
    )


def machine_memory(cgroup: Path = Path("/sys/fs/cgroup")) -> int | None:
    """The smaller of physical memory and the container's limit (cgroup v2 or v1); None when
    neither can be read."""
    limits = []
    if hasattr(os, "sysconf") and "SC_PHYS_PAGES" in os.sysconf_names:
        limits.append(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    for name in ("memory.max", "memory/memory.limit_in_bytes"):
        try:
            text = (cgroup / name).read_text().strip()
        except OSError:
            continue
        if text.isdigit() and int(text) < 1 << 60:  # v1 writes "no limit" as a huge number
            limits.append(int(text))
    return min(limits) if limits else None


def over_machine(settings: Settings, machine: int | None) -> str | None:
    """A warning when the settings let indexing hold more than `machine` bytes, else None."""
    bound = memory_bound(settings)
    if machine is None or bound.total <= machine:
        return None
    parts = ", ".join(
        f"{name} {_mib(value)}"
        for name, value in (
            ("reads", bound.reads),
            ("parsing", bound.parsing),
            ("batches", bound.batches),
            ("store", bound.store),
        )
    )
    return (
        f"these settings let indexing hold up to {_mib(bound.total)} ({parts}), more than the "
        f"{_mib(machine)} this machine has: documents near the limits could exhaust it; lower "
        "--max-decompressed-bytes, --batch-bytes or --workers"
    )


def _mib(size: int) -> str:
    return f"{size / MiB:,.0f} MiB"
