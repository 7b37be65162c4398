"""Every file of the shared conformance corpus gets its expected outcome and exact finding codes."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from viewlineage.indexer.errors import QuarantineError
from viewlineage.indexer.parse.config import ParseConfig
from viewlineage.indexer.parse.materialized_view import (
    FORMAT_REFRESH_STATE,
    FORMAT_TRINO,
    RecordedRefresh,
    table_refreshes,
)
from viewlineage.indexer.parse.metadata import ParsedVersion, parse_metadata
from viewlineage.indexer.pipeline.runs import index_locations
from viewlineage.indexer.spec.findings import Finding
from viewlineage.indexer.spec.materialized_view import StorageTableIdentifier

from .conftest import CONFORMANCE, settings_for

LEGACY_SCHEMA = "legacy-key:current-schema-id"
EXPECTED: dict[str, tuple[str, list[str]]] = {
    "iceberg/ValidViewMetadata.json": ("view", [LEGACY_SCHEMA]),
    "iceberg/ViewMetadataInvalidCurrentSchema.json": ("view", ["schema-not-found"]),
    "iceberg/ViewMetadataInvalidCurrentVersion.json": ("view", ["current-version-not-found", LEGACY_SCHEMA]),
    "iceberg/ViewMetadataMissingCurrentVersion.json": (
        "view",
        [LEGACY_SCHEMA, "missing-field:current-version-id"],
    ),
    "iceberg/ViewMetadataMissingLocation.json": ("view", [LEGACY_SCHEMA, "missing-field:location"]),
    "iceberg/ViewMetadataMultipleSQLsForDialect.json": ("view", ["duplicate-dialect", LEGACY_SCHEMA]),
    "iceberg/inline/TestViewMetadataParser__roundTripSerdeWithoutProperties__expectedJson.json": (
        "view",
        ["legacy-key:operation", "no-representations"],
    ),
    "iceberg/inline/TestLoadViewResponseParser__roundTripSerde__expectedJson.json": (
        "view",
        ["no-representations", "rest-envelope"],
    ),
    "iceberg/inline/TestLoadViewResponseParser__roundTripSerdeWithConfig__expectedJson.json": (
        "view",
        ["no-representations", "rest-envelope"],
    ),
    "iceberg/_historical/ViewMetadataLimitedVersions.json": (
        "view",
        [LEGACY_SCHEMA, "legacy-key:operation", "missing-view-uuid"],
    ),
    "iceberg/_historical/ViewMetadataMissingCurrentSchema.json": (
        "view",
        ["legacy-key:operation", "missing-view-uuid"],
    ),
    "iceberg-python/conftest__example_view_metadata_v1.json": ("view", ["legacy-key:engineVersion"]),
    "iceberg-python/conftest__example_view_metadata_v1_multiple_versions.json": ("view", []),
    "iceberg-python/test_rest__example_view_metadata_rest_json.json": (
        "view",
        ["legacy-key:engineVersion", "rest-envelope"],
    ),
    "iceberg-spec/view-spec__appendixA__00001-metadata.json": ("view", []),
    "iceberg-spec/view-spec__appendixA__00002-metadata.json": ("view", []),
    "iceberg-pr11041-mv-spec/mv-spec__example__event_agg_mv-00001-metadata.json": ("view", []),
    "iceberg-pr11041-mv-spec/mv-spec__example__refresh-state.json": ("quarantine:not-metadata", []),
    "iceberg-pr11041-mv-spec/mv-spec__appendixB__strategy1-empty-refresh-state.json": (
        "quarantine:not-metadata",
        [],
    ),
    "iceberg-pr9830-spark-mv/TestRefreshStateParser__testParseSpecExample.json": (
        "quarantine:not-metadata",
        [],
    ),
    "iceberg-pr9830-spark-mv/TestRefreshStateParser__testUnknownTypeThrows.json": (
        "quarantine:not-metadata",
        [],
    ),
    "iceberg-pr9830-spark-mv/TestViewVersionParser__testParseViewVersionWithStorageTableJson.json": (
        "quarantine:not-metadata",
        [],
    ),
    "trino/00001-69970f62-bbbc-4af2-a3ee-771e851ba4dd.metadata.json": ("table", []),
}
S3_EVENTS = sorted(p.relative_to(CONFORMANCE).as_posix() for p in (CONFORMANCE / "s3-events").glob("*.json"))
EXPECTED.update({name: ("quarantine:not-metadata", []) for name in S3_EVENTS})


def test_every_corpus_file_has_an_expectation() -> None:
    corpus = {p.relative_to(CONFORMANCE).as_posix() for p in CONFORMANCE.rglob("*.json")}
    assert corpus == set(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_conformance_file(name: str) -> None:
    outcome, codes = EXPECTED[name]
    path = CONFORMANCE / name
    try:
        parsed = parse_metadata(path.read_bytes(), str(path), ParseConfig())
    except QuarantineError as exc:
        assert f"quarantine:{exc.reason}" == outcome
        return
    assert parsed.kind == outcome
    assert sorted({f.code for f in parsed.findings}) == codes


def test_corpus_indexes_into_the_store(tmp_path: Path) -> None:
    db = tmp_path / "corpus.duckdb"
    # A path that names a file is read whatever its name; directories are listed by name only.
    files = [str(CONFORMANCE / name) for name in sorted(EXPECTED)]
    stats = index_locations(files, settings_for(db))
    assert (stats.indexed, stats.quarantined, stats.table_files) == (18, 17, 1)
    with duckdb.connect(str(db), read_only=True) as conn:
        missing = conn.execute(
            "SELECT view_id FROM view_files WHERE view_uuid IS NULL ORDER BY location"
        ).fetchall()
        assert missing == [("loc:s3://bucket/test/location",), ("loc:s3://bucket/test/location",)]
        refreshes = conn.execute(
            "SELECT r.format, r.snapshot_id, s.identifier, s.snapshot_id FROM mv_refreshes r "
            "JOIN mv_refresh_sources s USING (refresh_hash)"
        ).fetchall()
        assert refreshes == [("trino", 2658918943052245018, "tpch.source_table", 458588277474304854)]
        storage = conn.execute("SELECT namespace, name FROM version_storage_tables").fetchall()
        assert storage == [(["default"], "event_agg_mv__storage")]
        reasons = conn.execute("SELECT reason, count(*) FROM quarantine GROUP BY ALL").fetchall()
        assert reasons == [("not-metadata", 17)]
        conflicts = conn.execute(
            "SELECT view_id, version_id FROM findings WHERE code = 'version-conflict' ORDER BY ALL"
        ).fetchall()
        # The Java corpus reuses view-uuids across files whose versions differ (schema ids, namespaces).
        assert conflicts == [
            ("386b9f01-002b-4d8c-b77f-42c3fd3b7c9b", 1),
            ("a20125c8-7284-442c-9aea-15fee620737c", 1),
            ("fa6506c3-7681-40c8-86dc-e36561f83385", 1),
            ("fa6506c3-7681-40c8-86dc-e36561f83385", 2),
        ]
        # The copy that counts is the one listed by the file with the highest (sequence, location).
        listed = conn.execute(
            "SELECT v.view_id, v.version_id, v.version_hash, f.sequence_number, f.location FROM versions v "
            "JOIN file_versions USING (version_hash) JOIN view_files f USING (location)"
        ).fetchall()
        best: dict[tuple[str, int], tuple[tuple[int, str], str]] = {}
        for view_id, version_id, version_hash, sequence, location in listed:
            rank = (sequence if sequence is not None else -1, location)
            if (view_id, version_id) not in best or rank > best[(view_id, version_id)][0]:
                best[(view_id, version_id)] = (rank, version_hash)
        preferred = conn.execute("SELECT view_id, version_id, version_hash FROM preferred_copies").fetchall()
        assert sorted(preferred) == sorted((*key, best[key][1]) for key in conflicts)


def test_trino_storage_table_records_its_refresh() -> None:
    path = CONFORMANCE / "trino/00001-69970f62-bbbc-4af2-a3ee-771e851ba4dd.metadata.json"
    table = parse_metadata(path.read_bytes(), str(path), ParseConfig()).table
    assert table is not None
    [refresh] = table.refreshes
    assert (refresh.format, refresh.owner_id, refresh.snapshot_id) == (
        FORMAT_TRINO,
        "34e32361-c24e-40d0-aaec-ca4d0f129fad",
        2658918943052245018,
    )
    # trino-query-start-time 2026-01-15T18:59:50.832196Z, to the millisecond.
    assert (refresh.refreshed_ms, refresh.unknown_reason, refresh.view_version_id) == (
        1768503590832,
        None,
        None,
    )
    assert [(s.kind, s.identifier, s.namespace, s.name, s.snapshot_id) for s in refresh.sources] == [
        ("table", "tpch.source_table", ("tpch",), "source_table", 458588277474304854)
    ]


def test_mv_spec_draft_view_names_its_storage_table() -> None:
    path = CONFORMANCE / "iceberg-pr11041-mv-spec/mv-spec__example__event_agg_mv-00001-metadata.json"
    view = parse_metadata(path.read_bytes(), str(path), ParseConfig()).view
    assert view is not None
    [version] = view.versions
    assert isinstance(version, ParsedVersion)
    assert version.storage_table == StorageTableIdentifier(
        namespace=["default"], name="event_agg_mv__storage"
    )


def _refresh_state(name: str) -> tuple[list[RecordedRefresh], list[str]]:
    text = (CONFORMANCE / name).read_text()
    findings: list[Finding] = []
    refreshes, _ = table_refreshes(
        "storage", {}, [(7, 1573518436000, {"refresh-state": text}, "$")], findings
    )
    return refreshes, sorted(f.code for f in findings)


@pytest.mark.parametrize(
    "name",
    [
        "iceberg-pr11041-mv-spec/mv-spec__example__refresh-state.json",
        "iceberg-pr9830-spark-mv/TestRefreshStateParser__testParseSpecExample.json",
    ],
)
def test_refresh_state_examples_parse_as_the_draft_says(name: str) -> None:
    [refresh], codes = _refresh_state(name)
    assert codes == []
    assert (refresh.format, refresh.snapshot_id, refresh.view_version_id, refresh.refreshed_ms) == (
        FORMAT_REFRESH_STATE,
        7,
        1,
        1573518435000,
    )
    assert [(s.kind, s.namespace, s.name, s.uuid, s.snapshot_id, s.ref) for s in refresh.sources] == [
        ("table", ("default",), "events", "d4a10b5c-1e8a-4b72-9d67-3f4a8c9e1b2d", 6148331192489823102, None)
    ]


def test_an_empty_refresh_state_has_no_sources() -> None:
    [refresh], codes = _refresh_state(
        "iceberg-pr11041-mv-spec/mv-spec__appendixB__strategy1-empty-refresh-state.json"
    )
    assert (codes, refresh.sources, refresh.view_version_id) == ([], (), 1)


def test_an_unknown_source_state_type_is_a_finding_not_a_refresh() -> None:
    refreshes, codes = _refresh_state(
        "iceberg-pr9830-spark-mv/TestRefreshStateParser__testUnknownTypeThrows.json"
    )
    assert refreshes == []
    assert codes == ["invalid-field:source-states", "invalid-refresh-state"]
