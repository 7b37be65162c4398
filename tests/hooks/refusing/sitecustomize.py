"""Loaded at start-up through PYTHONPATH (with the checkout's root) by tests of processes: the
store refuses the rows of files whose location contains VIEWLINEAGE_TEST_REFUSE."""

from __future__ import annotations

import os

from tests.refusals import refusing
from viewlineage.indexer.pipeline.rows import Batch

Batch.to_arrow = refusing(Batch.to_arrow, os.environ["VIEWLINEAGE_TEST_REFUSE"])  # type: ignore[method-assign]
