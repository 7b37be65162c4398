"""Restore the sample warehouse's file mtimes from `sample/mtimes.json`.

Git does not keep mtimes, and a file's mtime is its commit time for property-only changes, so the
tests and the README demo put them back before indexing: `python tests/data/restore_mtimes.py`.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

SAMPLE = Path(__file__).parent / "sample"


def restore_mtimes(sample: Path = SAMPLE, warehouse: Path | None = None) -> int:
    """Set each recorded file's mtime under `warehouse` (default: the sample's own); returns the count."""
    warehouse = warehouse or sample / "warehouse"
    recorded: dict[str, int] = json.loads((sample / "mtimes.json").read_text())
    for relative, mtime_ns in recorded.items():
        os.utime(warehouse / relative, ns=(mtime_ns, mtime_ns))
    return len(recorded)


if __name__ == "__main__":
    count = restore_mtimes(Path(sys.argv[1]) if len(sys.argv) > 1 else SAMPLE)
    print(f"restored {count} mtimes")
