"""`consume`: object-store notifications from Kafka -> the store, with nothing lost.

Each loop polls a batch of messages, decodes them (`events.decode_message`), reads the created
objects in parallel (bounded retries), parses them, and records removals. The batch goes into the
spool as one durable segment; the process holding the store's write lock merges the spool into the
store; only then are the batch's offsets committed. A crash anywhere re-delivers the batch, and
idempotent ingest absorbs it. Several processes in one group share partitions and the spool; one of
them at a time is the writer (see `sinks/spool.py`).

Per message: a message that cannot be decoded is quarantined (`bad-event`, located at
`kafka://topic/partition/offset`) and, with `--dead-letter-topic`, forwarded there with its reason
in a header; a created object that cannot be read after retries is quarantined with its reason; an
object outside the allowed prefixes is counted and never read. A bad message too large for the
dead-letter topic goes there cut (`DEAD_LETTER_CUT_BYTES`), saying its size.
"""

from __future__ import annotations

import contextlib
import queue
import threading
import time
from collections import Counter, OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from viewlineage.indexer.config import Settings, load_kafka_config
from viewlineage.indexer.errors import (
    ReadError,
    ServiceUnavailable,
    SourceUnavailable,
    TransientReadError,
    UsageError,
)
from viewlineage.indexer.faults import Faults
from viewlineage.indexer.followers.writer import StoreWriter
from viewlineage.indexer.parse.locations import is_metadata_file_name, normalize_location
from viewlineage.indexer.pipeline.health import Health
from viewlineage.indexer.pipeline.indexer import Indexer
from viewlineage.indexer.pipeline.reads import ReadFailure, read_all
from viewlineage.indexer.pipeline.rows import Batch, QuarantinedFile, Removal
from viewlineage.indexer.pipeline.runs import gap_batch, with_store_naming
from viewlineage.indexer.pipeline.store_thread import StoreThread
from viewlineage.indexer.pipeline.workers import worker_pool
from viewlineage.indexer.sources.events import EventDecodeError, EventKind, decode_message
from viewlineage.indexer.sources.read import FileRead, ListedFile, Reader, reader_for
from viewlineage.sinks.readers import Readers
from viewlineage.sinks.spool import Spool

REWRITE_SLACK_MS = 1_000
"""How much later than an indexed object's time a create event of its key must be to say that the
object was written again (read again: the same content changes nothing, other is `location-reused`)."""
FUTURE_EVENT_SLACK_MS = 60_000
"""How far ahead of this machine's clock an event's time may be before it is taken for skewed."""
RECENT_LOCATIONS = 100_000
"""How many indexed locations a process remembers to spot re-deliveries without the store."""
OUTAGE_BACKOFF_LIMIT = 30.0
"""Longest wait between tries of a batch while the object store does not answer (seconds)."""
SPOOL_WAITING = "spool-waiting"
DEAD_LETTER_CUT_BYTES = 64 * 1024
"""Of a bad message's value (and key) too large for the dead-letter topic, what is forwarded: the
whole stays in the source topic, at the `kafka://topic/partition/offset` the letter names."""


@dataclass(frozen=True, slots=True)
class Message:
    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    timestamp_ms: int | None

    @property
    def location(self) -> str:
        return f"kafka://{self.topic}/{self.partition}/{self.offset}"


@dataclass
class BuiltBatch:
    batch: Batch
    outcomes: Counter[str] = field(default_factory=Counter)
    bad: list[tuple[Message, EventDecodeError]] = field(default_factory=list)


def allowed(url: str, prefixes: tuple[str, ...] | None) -> bool:
    """None allows any prefix."""
    return prefixes is None or any(url == p or url.startswith(p.rstrip("/") + "/") for p in prefixes)


class EventIngest:
    """Messages -> one batch: decode, filter, read the created objects, parse, record removals."""

    def __init__(self, indexer: Indexer, settings: Settings, prefixes: tuple[str, ...] | None) -> None:
        self.indexer = indexer
        self.settings = settings
        self.prefixes = prefixes
        self._readers: dict[str, Reader] = {}
        self._recent: OrderedDict[str, None] = OrderedDict()
        self._created: OrderedDict[str, int] = OrderedDict()
        """Locations whose create events this process saw last, with the newest one's time: a
        delete event older than it is stale (an earlier incarnation's, delivered late)."""
        self._removed: OrderedDict[str, int] = OrderedDict()
        """Locations whose removal this process saw last, with its time: the store may not hold it
        yet when a create event comes (see `_indexed`)."""
        for prefix in prefixes or ("s3://",):  # s3fs's import and client before the first event's read
            if "://" in prefix:
                self.reader(prefix)

    def reader(self, url: str) -> Reader:
        scheme = url.split("://", 1)[0]
        if scheme not in self._readers:
            self._readers[scheme] = reader_for(url, self.settings.s3_endpoint)
        return self._readers[scheme]

    def _indexed(self, created_ms: dict[str, int | None]) -> tuple[set[str], set[str]]:
        """Of the locations created (with their create events' time), those indexed already, and
        those removed (by an event this process saw, or one the store holds) before their create
        event: deleted and put back, they are read again and stored as back. A create event older
        than the removal is a duplicate, or a late one: the removal stands. One clearly newer than
        the indexed object says it was written again: it is read again too."""
        indexed = {location for location in created_ms if location in self._recent}
        stored = self.indexer.store.modified_at(created_ms) if self.indexer.store is not None else {}
        indexed |= stored.keys()
        # Of every location created: a delete consumed before the create of a file never indexed
        # (the fourteenth adversarial trial) is a removal the file is back from, too.
        removed = self.indexer.store.removed_at(set(created_ms)) if self.indexer.store is not None else {}
        for location in created_ms.keys() & self._removed.keys():  # the store may not hold it yet
            removed[location] = max(self._removed[location], removed.get(location, self._removed[location]))
        known = indexed - removed.keys()
        known -= {  # a create newer than the object indexed: written again
            location
            for location in known & stored.keys()
            if (modified_ms := stored[location]) is not None
            and _after(created_ms[location], modified_ms + REWRITE_SLACK_MS)
        }
        back = {
            location
            for location, removed_ms in removed.items()
            if self._back(location, created_ms, removed_ms)
        }
        return known | ((removed.keys() & indexed) - back), back

    def _back(self, location: str, created_ms: dict[str, int | None], removed_ms: int) -> bool:
        """Whether a create event puts back a file removed at `removed_ms`: it is newer; or of the
        same millisecond and the object is there (a delete and a create of one instant, found by
        the seventeenth adversarial trial: whichever came last, what is there now says)."""
        created = created_ms[location]
        return _after(created, removed_ms) or (
            created == removed_ms and self._written_ms(location) is not None
        )

    def _written_ms(self, url: str) -> int | None:
        """When the object there now was written; None when it is gone. Asked of the object store,
        since the event does not say; one that cannot answer is waited out as for reads."""
        try:
            return self.reader(url).written_ms(url)
        except TransientReadError as exc:
            raise SourceUnavailable(url, f"the object store does not answer: {exc.message}") from exc

    def _written_since(self, url: str, created_ms: dict[str, int | None], written_now: int) -> int:
        """When the object at `url` was last known written: by the newest create event this process
        saw (in this batch or before), or by the object there now (`written_now`, what a restart,
        which forgets the creates, still knows)."""
        return max(ms for ms in (created_ms.get(url), self._created.get(url), written_now) if ms is not None)

    def _remember(self, locations: Iterable[str]) -> None:
        for location in locations:
            self._removed.pop(location, None)
            self._recent[location] = None
            self._recent.move_to_end(location)
        while len(self._recent) > RECENT_LOCATIONS:
            self._recent.popitem(last=False)

    def _forget(self, location: str, removed_ms: int) -> None:
        """Note a removal: a create event newer than it brings the file back."""
        self._removed[location] = max(removed_ms, self._removed.get(location, removed_ms))
        self._removed.move_to_end(location)
        while len(self._removed) > RECENT_LOCATIONS:
            self._removed.popitem(last=False)

    def build(self, messages: list[Message], store_was_down: bool = False) -> BuiltBatch:
        built = BuiltBatch(Batch())
        created: list[str] = []
        sizes: dict[str, int | None] = {}
        created_ms: dict[str, int | None] = {}  # each location's newest create event's time
        removed_here: dict[str, int] = {}
        for message in messages:
            try:
                decoded = decode_message(message.key, message.value, message.timestamp_ms)
            except EventDecodeError as exc:
                built.bad.append((message, exc))
                built.batch.quarantined.append(
                    QuarantinedFile(message.location, "bad-event", f"{exc.reason}: {exc}", None, None)
                )
                built.outcomes["bad-event"] += 1
                continue
            for skipped in decoded.skipped:
                built.outcomes[f"skipped:{skipped.reason}"] += 1
            for event in decoded.events:
                url = normalize_location(event.url)
                if not is_metadata_file_name(url.rsplit("/", 1)[-1]):
                    built.outcomes["skipped:not-metadata-key"] += 1
                elif not allowed(url, self.prefixes):
                    built.outcomes["skipped:outside-allowed-prefix"] += 1
                elif len(url.encode()) > MAX_LOCATION_BYTES:
                    # No object store holds such a key (S3: 1,024 bytes); obstore panicked on one.
                    built.outcomes["skipped:key-too-long"] += 1
                elif event.kind is EventKind.REMOVED:
                    written_now = self._written_ms(url)  # None: the object is gone
                    if event.removed_version and written_now is not None:
                        # One version of it removed, another current: the metadata file stays.
                        built.outcomes["skipped:other-versions-remain"] += 1
                        continue
                    removed_ms = event.event_ms if event.event_ms is not None else message.timestamp_ms
                    now_ms = int(time.time() * 1000)
                    # Neither the event nor Kafka says when, or says a time to come (a skewed or forged
                    # `eventTime`, found by the twelfth adversarial trial: 9999-12-31 left the view
                    # current now and dropped at once): now is closest, and no later than the truth.
                    if removed_ms is None or removed_ms > now_ms + FUTURE_EVENT_SLACK_MS:
                        removed_ms = now_ms
                    since = None if written_now is None else self._written_since(url, created_ms, written_now)
                    if _after(since, removed_ms):
                        # A delete older than a create seen already, or than the object there now: an
                        # earlier incarnation's, late (the thirteenth adversarial trial: it dropped a
                        # live view; the fourteenth and fifteenth: after a restart, which forgets the
                        # creates). A gone object's delete counts, whatever its time says.
                        built.outcomes["skipped:older-than-create"] += 1
                        continue
                    built.batch.removals.append(Removal(url, removed_ms, event.source))
                    built.outcomes["removed"] += 1
                    self._forget(url, removed_ms)
                    removed_here[url] = max(removed_ms, removed_here.get(url, removed_ms))
                else:
                    created.append(url)
                    when = event.event_ms if event.event_ms is not None else message.timestamp_ms
                    earlier = (when, created_ms.get(url), self._created.get(url))
                    created_ms[url] = max((ms for ms in earlier if ms is not None), default=None)
                    sizes[url] = event.size
        # Outcomes per event, whatever the batching: the first event of a file indexes it, later
        # ones (here or in later batches) find it indexed; a missing object is missing each time.
        unique = list(dict.fromkeys(created))
        known, back = self._indexed(created_ms)
        todo = [(self.reader(url), ListedFile(url, sizes[url])) for url in unique if url not in known]
        if todo and store_was_down:  # no reads to wait out while it stays down
            _unless_answering(todo[0], "the object store still does not answer")
        reads: list[FileRead | ReadFailure] = list(read_all(todo, self.settings, announced=True))
        failed = [
            r.error for r in reads if isinstance(r, ReadFailure) and isinstance(r.error, TransientReadError)
        ]
        if failed:  # an outage, or objects failing on their own: the store's answer tells which
            _unless_answering(todo[0], f"the object store does not answer: {failed[0].message}")
            # It answers now: what failed while it came back is read once more before it counts as
            # unreadable (a server restarting answered its probe while a read failed, found in CI).
            again = {
                r.location
                for r in reads
                if isinstance(r, ReadFailure) and isinstance(r.error, TransientReadError)
            }
            retried = {
                item.location: item
                for item in read_all(
                    [entry for entry in todo if entry[1].location in again], self.settings, announced=True
                )
            }
            reads = [retried.get(r.location, r) if isinstance(r, ReadFailure) else r for r in reads]
        files = self.indexer.build_batch(reads, missing_is_quarantine=True)
        # Files deleted and put back (a create event newer than the removal, and read): their
        # removals go, this batch's too.
        read = [item.read.location for item in files.indexed]
        built.batch.back = [
            location
            for location in read
            if location in back
            or (location in removed_here and self._back(location, created_ms, removed_here[location]))
        ]
        built.batch.indexed = files.indexed
        built.batch.lineage = files.lineage
        built.batch.quarantined.extend(files.quarantined)
        result = {item.read.location: "indexed" for item in files.indexed}
        for item in files.quarantined:
            result[item.location] = "object-missing" if item.reason == "object-missing" else "quarantined"
        for url in created:
            outcome = "already-indexed" if url in known else result[url]
            built.outcomes[outcome] += 1
            if outcome == "indexed":
                known.add(url)
        self._remember(item.parsed.location for item in files.indexed)
        for url, ms in created_ms.items():
            if ms is not None:
                self._created[url] = ms
                self._created.move_to_end(url)
        while len(self._created) > RECENT_LOCATIONS:
            self._created.popitem(last=False)
        return built


MAX_LOCATION_BYTES = 2048
"""Longer locations name no object: S3 keys are at most 1,024 bytes (a bucket's name at most 63)."""


def _after(ms: int | None, than: int) -> bool:
    """Whether a time (a create event's, an object's) is after another (an unknown one is not)."""
    return ms is not None and ms > than


def _unless_answering(entry: tuple[Reader, ListedFile], message: str) -> None:
    """Raise `SourceUnavailable` unless the object store holding `entry` answers."""
    reader, listed = entry
    if not reader.answers(listed.location):
        raise SourceUnavailable(listed.location, message)


def _messages(polled: dict[Any, list[Any]]) -> list[Message]:
    return [
        Message(r.topic, r.partition, r.offset, r.key, r.value, r.timestamp)
        for records in polled.values()
        for r in records
    ]


class Consumer:
    """The `consume` loop. `stop` ends it after the batch in hand is committed."""

    def __init__(
        self,
        settings: Settings,
        health: Health,
        faults: Faults,
        stop: threading.Event,
        readers: Readers | None = None,
    ) -> None:
        """`readers` (an HTTP API's) read this process's store while it holds it."""
        if not settings.topics:
            raise UsageError("consume needs at least one --topic")
        if not settings.allow_prefix and not settings.allow_any_prefix:
            raise UsageError(
                "consume needs --allow-prefix s3://bucket/prefix (repeatable) or --allow-any-prefix"
            )
        settings = with_store_naming(settings)  # before the writer and the workers take them
        self.settings = settings
        self.health = health
        self.faults = faults
        self.stop = stop
        self.prefixes = (
            None if settings.allow_any_prefix else tuple(normalize_location(p) for p in settings.allow_prefix)
        )
        self.kafka_config = load_kafka_config(settings.kafka_config) if settings.kafka_config else {}
        self.spool = Spool(settings.db)
        self.writer = StoreWriter(settings, self.spool, health, readers)
        self.writes: StoreThread[_Unmerged] = StoreThread(self._merge)
        """Merges the spooled batches into the store while the next ones are read and parsed."""
        self.merged: queue.SimpleQueue[_Unmerged] = queue.SimpleQueue()
        """Batches the store holds, their offsets not committed yet: the main thread commits them
        (the Kafka consumer is not thread-safe), without waiting for the merges in progress."""
        self._outage_seconds = 0.0
        """The last wait for an object store that did not answer (doubled while it goes on)."""
        self._spool_waiting = False
        """Whether spooled batches wait past `spool-wait-limit` for a writer (said once)."""

    def _consumer(self) -> Any:
        from kafka import KafkaConsumer

        options: dict[str, Any] = {
            "bootstrap_servers": self.settings.bootstrap_servers.split(","),
            "group_id": self.settings.group,
            "enable_auto_commit": False,
            "auto_offset_reset": "earliest",
            "max_poll_records": self.settings.batch_files,
            "session_timeout_ms": 10_000,
            "heartbeat_interval_ms": 3_000,
            **self.kafka_config,
        }
        return KafkaConsumer(*self.settings.topics, **options)

    def _dead_letter(
        self, producer: Any, message: Message, error: EventDecodeError, cut: bool = False
    ) -> Any:
        """Send a bad message to the dead-letter topic with its reason and where it is; one larger
        than the producer sends goes `cut`: its first `DEAD_LETTER_CUT_BYTES`, and its size."""
        from kafka.errors import MessageSizeTooLargeError

        value = message.value if message.value is not None else b""
        headers = [
            ("viewlineage-reason", error.reason.encode()),
            ("viewlineage-source", message.location.encode()),
        ]
        if cut:
            headers.append(("viewlineage-cut-from-bytes", str(len(value)).encode()))
            self.health.log("dead-letter-cut", location=message.location, bytes=len(value))
        key = message.key[:DEAD_LETTER_CUT_BYTES] if cut and message.key is not None else message.key
        try:
            return producer.send(
                self.settings.dead_letter_topic,
                value=value[:DEAD_LETTER_CUT_BYTES] if cut else value,
                key=key,
                headers=headers,
            )
        except MessageSizeTooLargeError:
            if cut:
                raise
            return self._dead_letter(producer, message, error, cut=True)

    def _producer(self) -> Any:
        from kafka import KafkaProducer

        client_keys = {"security_protocol", "ssl_cafile", "ssl_certfile", "ssl_keyfile", "ssl_password"}
        client_keys |= {"sasl_mechanism", "sasl_plain_username", "sasl_plain_password", "client_id"}
        options = {key: value for key, value in self.kafka_config.items() if key in client_keys}
        return KafkaProducer(bootstrap_servers=self.settings.bootstrap_servers.split(","), **options)

    def run(self) -> None:
        settings = self.settings
        spool, writer = self.spool, self.writer
        # Workers are forked: start them before the Kafka threads exist.
        workers = contextlib.ExitStack()
        pool = workers.enter_context(worker_pool(settings))
        indexer = Indexer(None, settings.parse_config(), pool)
        ingest = EventIngest(indexer, settings, self.prefixes)
        from kafka.errors import KafkaError

        try:
            consumer = self._consumer()
            producer = self._producer() if settings.dead_letter_topic else None
        except KafkaError as exc:
            workers.close()
            raise ServiceUnavailable(
                f"cannot reach the Kafka brokers {settings.bootstrap_servers}: {exc}"
            ) from exc
        reconciled_at = time.monotonic()
        self.health.log(
            "consuming", topics=",".join(settings.topics), group=settings.group, store=settings.db
        )
        try:
            while not self.stop.is_set():
                self.health.beat()
                if writer.acquire():
                    indexer.store = writer.store
                polled = consumer.poll(timeout_ms=200, max_records=settings.batch_files)
                messages = _messages(polled)
                if messages:
                    try:
                        self._handle(messages, polled, ingest, spool, writer, consumer, producer)
                    except SourceUnavailable as exc:
                        self._wait_for_source(consumer, polled, exc)
                        continue
                    self.health.problem = None
                else:
                    self._settle(consumer)
                    writer.merge()
                self._check_spool(spool, writer)
                if (
                    writer.store is not None
                    and settings.reconcile_every is not None
                    and time.monotonic() - reconciled_at >= settings.reconcile_every
                ):
                    self._reconcile(indexer, ingest, spool, writer)
                    reconciled_at = time.monotonic()
        finally:
            try:
                self._settle(consumer)
            finally:
                self.writes.close()
            consumer.close()
            if producer is not None:
                producer.close()
            writer.close()
            workers.close()

    def _check_spool(self, spool: Spool, writer: StoreWriter) -> None:
        """A problem (`/healthz` answers 503) while batches this process spooled wait longer than
        the `spool-wait-limit` setting for a writer: the store's lock holder does not merge them (a
        `watch` or `index` writes the store; only `consume` processes share it)."""
        count, waited = spool.waiting() if writer.store is None else (0, 0.0)
        waiting = waited > self.settings.spool_wait_limit
        if waiting and not self._spool_waiting:
            self.health.log(SPOOL_WAITING, segments=count, seconds=round(waited))
        self._spool_waiting = waiting
        if waiting and self.health.problem is None:
            self.health.problem = (
                f"{SPOOL_WAITING}: {count} batches in {spool.path} have waited {round(waited)} s for the "
                f"store's writer; another process holds {self.settings.db} and does not merge them (only "
                "`consume` processes share a store: give `watch` or `index` another one)"
            )
        elif not waiting and (self.health.problem or "").startswith(SPOOL_WAITING):
            self.health.problem = None

    def _wait_for_source(self, consumer: Any, polled: dict[Any, list[Any]], error: SourceUnavailable) -> None:
        """Keep the batch's place (its messages come again) and wait, longer each time in a row."""
        for partition, records in polled.items():
            consumer.seek(partition, min(record.offset for record in records))
        self._outage_seconds = min(
            OUTAGE_BACKOFF_LIMIT, self._outage_seconds * 2 if self.health.problem else 0.5
        )
        self.health.problem = f"source-unavailable: {error.message}"
        self.health.log("source-unavailable", error=str(error), retry_seconds=self._outage_seconds)
        self.stop.wait(self._outage_seconds)

    def _handle(
        self,
        messages: list[Message],
        polled: dict[Any, list[Any]],
        ingest: EventIngest,
        spool: Spool,
        writer: StoreWriter,
        consumer: Any,
        producer: Any,
    ) -> None:
        from kafka.errors import MessageSizeTooLargeError
        from kafka.structs import OffsetAndMetadata

        started = time.monotonic()
        built = ingest.build(messages, store_was_down=self.health.problem is not None)
        self.faults.point("mid-batch")
        if producer is not None:
            # Dead letters must be delivered before the offsets move on: wait for each send.
            sends = [
                (message, error, self._dead_letter(producer, message, error)) for message, error in built.bad
            ]
            producer.flush()
            for message, error, sent in sends:
                try:
                    sent.get(timeout=30)
                except MessageSizeTooLargeError:  # larger than the broker takes
                    self._dead_letter(producer, message, error, cut=True).get(timeout=30)
        spooled = time.monotonic()
        indexed = len(built.batch.indexed)
        spool.put(built.batch.to_arrow())
        # A file whose rows the conversion had to quarantine (`Batch.to_arrow`) counts so.
        built.outcomes["indexed"] -= indexed - len(built.batch.indexed)
        built.outcomes["quarantined"] += indexed - len(built.batch.indexed)
        self.faults.point("after-spool")
        offsets = {
            tp: OffsetAndMetadata(max(r.offset for r in records) + 1, "", -1)
            for tp, records in polled.items()
        }
        fields: dict[str, Any] = {
            "messages": len(messages),
            "writer": writer.store is not None,
            "spool_seconds": round(time.monotonic() - spooled, 4),
        }
        unmerged = _Unmerged(
            built.outcomes, started, offsets, fields, {i.read.location for i in built.batch.indexed}
        )
        if writer.store is None:  # the writer merges it: in the spool, the batch counts as committed
            self._commit(consumer, unmerged)
            return
        self.writes.submit(unmerged)
        self._commit_merged(consumer)

    def _merge(self, unmerged: list[_Unmerged]) -> None:
        """On the store thread: the spool holds every batch submitted."""
        merging = time.monotonic()
        # A file the store set aside was quarantined, not indexed (as `watch` counts it).
        set_aside = set(self.writer.merge().reasons())
        self.faults.point("after-store-commit")
        for each in unmerged:
            each.fields["store_seconds"] = round(time.monotonic() - merging, 4)
            if quarantined := len(set_aside & each.indexed):
                each.outcomes["indexed"] -= quarantined
                each.outcomes["quarantined"] += quarantined
            self.merged.put(each)

    def _commit_merged(self, consumer: Any) -> None:
        """Commit the offsets of the batches merged so far, in order: a writer commits only what its
        store holds."""
        while not self.merged.empty():
            self._commit(consumer, self.merged.get())

    def _settle(self, consumer: Any) -> None:
        """Wait for the merges in progress, then commit their offsets."""
        self.writes.wait()
        self._commit_merged(consumer)

    def _commit(self, consumer: Any, unmerged: _Unmerged) -> None:
        from kafka.errors import CommitFailedError, KafkaError

        try:
            consumer.commit(unmerged.offsets)
        except (CommitFailedError, KafkaError) as exc:
            # A rebalance or a broker hiccup: the messages come again; the store absorbs them.
            self.health.log("commit-failed", error=str(exc))
        self.faults.point("after-offset-commit")
        self.health.batch(
            unmerged.outcomes, time.monotonic() - unmerged.started, lag=_lag(consumer), **unmerged.fields
        )

    def _reconcile(self, indexer: Indexer, ingest: EventIngest, spool: Spool, writer: StoreWriter) -> None:
        self.writes.wait()
        if self.prefixes is None:
            return  # nothing bounded to list
        for prefix in self.prefixes:
            try:
                batch, outcomes = gap_batch(
                    indexer, ingest.reader(prefix), prefix, self.settings, int(time.time() * 1000)
                )
            except ReadError as exc:  # the listing failed: the next round tries again
                self.health.log("reconcile-failed", prefix=prefix, error=str(exc))
                continue
            spool.put(batch.to_arrow())
            writer.merge()
            self.health.count(outcomes)
            self.health.unlisted(ingest.reader(prefix).unlisted)
            self.health.log("reconciled", prefix=prefix, outcomes=dict(outcomes))


@dataclass
class _Unmerged:
    """A spooled batch whose offsets wait for the store to hold it."""

    outcomes: Counter[str]
    started: float
    offsets: dict[Any, Any]
    fields: dict[str, Any]
    indexed: set[str]
    """The locations of the files it indexed (the store may set one aside)."""


def _lag(consumer: Any) -> int | None:
    total = 0
    for tp in consumer.assignment():
        highwater = consumer.highwater(tp)
        if highwater is None:
            return None
        total += max(0, highwater - consumer.position(tp))
    return total


__all__ = ["Consumer", "EventIngest", "Message", "allowed"]
