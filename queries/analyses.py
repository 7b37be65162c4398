"""The column analyses of views' SQL (`column_lineage`) that questions ask, kept for the life of the
process: `impact` of a column of a table 150 views read analyses each reader's SQL once or twice, at
~13 ms each, seconds a question; kept, the same question takes its analyses from here. A serving
process works them out ahead for the views current now (`viewlineage.queries.warm`).

An analysis is a pure function of its inputs (the SQL and its defaults, the schemas of what it
reads, how its references resolved, whether typed), so it is kept under a digest of them and no
change to the store can make one wrong: a new version or a new schema is another key. Kept as
compressed JSON (~0.5 KB an analysis, ~14x less than its JSON), least recently used first out.
"""

from __future__ import annotations

import hashlib
import threading
import zlib
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from contextvars import ContextVar

import orjson
from pydantic import TypeAdapter

from viewlineage.indexer.lineage.columns import ColumnLineage, TableKey, column_lineage
from viewlineage.indexer.lineage.config import LineageConfig
from viewlineage.indexer.lineage.tables import LineageRequest

WORK_OUT: ContextVar[Callable[..., ColumnLineage]] = ContextVar("work_out", default=column_lineage)
"""How an analysis not kept is worked out: `column_lineage` in this thread, unless the thread says
otherwise (`viewlineage.queries.warm` works them out in a process of its own)."""
ANALYSES_BUDGET_BYTES = 64 * 2**20
"""Compressed analyses a process keeps: ~130,000, more than a 10^4-view warehouse's current
versions ask (two per representation at most: as now, and as the version was created)."""
DECODED_KEPT = 2048
"""Analyses also kept decoded, the most recently used: decoding one costs ~0.3 ms, ~70 ms of a
question that reads 230 of them, and a page's downloads ask its question again. Analyses are
frozen, so questions share them. ~9 KiB each on the realistic warehouse: ~18 MiB."""
_LINEAGE = TypeAdapter(ColumnLineage)


def analysis_key(
    request: LineageRequest,
    schemas: Mapping[TableKey, Sequence[tuple[str, str]]],
    resolved: Mapping[str, TableKey],
    typed: bool,
) -> bytes:
    """A digest of everything `column_lineage` depends on (its configuration is the default)."""
    inputs = [
        request.sql,
        request.dialect,
        request.default_catalog,
        request.default_namespace,
        request.view_catalog,
        list(schemas.items()),  # in their order: the analysis is a function of it
        list(resolved.items()),
        typed,
    ]
    return hashlib.blake2b(orjson.dumps(inputs), digest_size=16).digest()


class Analyses:
    """Column analyses by `analysis_key`, within a budget of compressed bytes; thread-safe (the web
    server answers on a pool of threads, and a warming thread adds to them)."""

    def __init__(self, budget_bytes: int = ANALYSES_BUDGET_BYTES) -> None:
        self.budget_bytes = budget_bytes
        self._kept: OrderedDict[bytes, bytes] = OrderedDict()
        self._decoded: OrderedDict[bytes, ColumnLineage] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self.worked_out = 0
        """Analyses worked out rather than found kept, since the process started."""

    def lineage(
        self,
        request: LineageRequest,
        schemas: Mapping[TableKey, Sequence[tuple[str, str]]],
        resolved: Mapping[str, TableKey],
        typed: bool = False,
    ) -> ColumnLineage:
        """The analysis, kept or worked out now (and kept)."""
        key = analysis_key(request, schemas, resolved, typed)
        with self._lock:
            kept = self._kept.get(key)
            if kept is not None:
                self._kept.move_to_end(key)
                if (decoded := self._decoded.get(key)) is not None:
                    self._decoded.move_to_end(key)
                    return decoded
        if kept is not None:
            lineage = _LINEAGE.validate_json(zlib.decompress(kept))
        else:
            lineage = WORK_OUT.get()(request, LineageConfig(), dict(schemas), dict(resolved), typed)
            self._keep(key, zlib.compress(orjson.dumps(lineage)))
        with self._lock:
            if key in self._kept:  # not evicted meanwhile
                self._decoded[key] = lineage
                while len(self._decoded) > DECODED_KEPT:
                    self._decoded.popitem(last=False)
        return lineage

    def __len__(self) -> int:
        return len(self._kept)

    @property
    def kept_bytes(self) -> int:
        return self._bytes

    def clear(self) -> None:
        with self._lock:
            self._kept.clear()
            self._decoded.clear()
            self._bytes = 0

    def _keep(self, key: bytes, compressed: bytes) -> None:
        with self._lock:
            self.worked_out += 1
            if key in self._kept:
                return
            self._kept[key] = compressed
            self._bytes += len(compressed)
            while self._bytes > self.budget_bytes and self._kept:
                evicted, dropped = self._kept.popitem(last=False)
                self._decoded.pop(evicted, None)
                self._bytes -= len(dropped)


ANALYSES = Analyses()
"""The process's analyses: every question in it shares them."""
