"""Real Spark + Iceberg writers for tests: scenarios that write view and table metadata."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run_scenario(module: str, *args: str, cwd: Path) -> None:
    """Runs `python -m tests.realwriter.<module> ARGS` to the end; its output goes to cwd/spark.log
    and Spark's own ./spark-warehouse into `cwd`."""
    with (cwd / "spark.log").open("w") as log:
        subprocess.run(
            [sys.executable, "-m", f"tests.realwriter.{module}", *args],
            stdout=log,
            stderr=subprocess.STDOUT,
            timeout=600,
            check=True,
            cwd=cwd,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
