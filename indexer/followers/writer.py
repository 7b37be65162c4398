"""The one process that writes a store: whoever holds its lock merges the spool into it."""

from __future__ import annotations

import time

from viewlineage.indexer.config import Settings
from viewlineage.indexer.errors import StoreError
from viewlineage.indexer.pipeline.health import Health
from viewlineage.indexer.pipeline.indexer import complete_files
from viewlineage.indexer.pipeline.runs import with_roots, writable_store
from viewlineage.sinks.readers import Readers
from viewlineage.sinks.spool import Spool
from viewlineage.sinks.store import SetAside, Store

ACQUIRE_RETRY_SECONDS = 1.0


class StoreWriter:
    """Tries for the store's write lock (at most every second) until it holds it, then keeps it
    and merges the spool. A process that never gets it keeps feeding the spool."""

    def __init__(
        self, settings: Settings, spool: Spool, health: Health, readers: Readers | None = None
    ) -> None:
        self.settings = settings
        self.spool = spool
        self.health = health
        self.readers = readers
        self.store: Store | None = None
        self._tried = float("-inf")
        self._refusal: str | None = None

    def acquire(self) -> bool:
        """True when this call took the lock."""
        now = time.monotonic()
        if self.store is not None or now - self._tried < ACQUIRE_RETRY_SECONDS:
            return False
        self._tried = now
        try:
            # Once refused, the lock is another writer's for good: ask without waiting, so that the
            # process goes on feeding the spool (a wait each second held its Kafka loop).
            self.store = writable_store(self.settings, lock_wait=0.0 if self._refusal else None)
        except StoreError as exc:
            if "Could not set lock" not in str(exc):
                raise  # not another writer: a bad path, permissions, a damaged file
            if self._refusal is None:
                self.health.log("not-writer", reason=str(exc).splitlines()[0])
            self._refusal = str(exc)
            return False
        if self.readers is not None:
            self.readers.attach(self.store)
        self.merge()
        self.store.publish_replica(force=True)  # readers get an answer (maybe empty) from the start
        # Logged once other processes' readers can read the store: from its replica.
        self.health.log("writer", store=self.settings.db)
        return True

    def merge(self) -> SetAside:
        """Store the spool's segments; returns the files in them the store set aside."""
        if self.store is None:
            return SetAside()
        set_aside = self.spool.merge_into(self.store).set_aside
        for location, reason in set_aside.reasons().items():
            self.health.log("quarantined", location=location, reason=reason)
        complete_files(self.store, with_roots(self.settings.parse_config(), self.store.roots()))
        self.store.publish_replica()
        return set_aside

    def close(self) -> None:
        if self.store is not None:
            self.merge()
            if self.readers is not None:
                self.readers.attach(None)
            self.store.close()
            self.store = None
