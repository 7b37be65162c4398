from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest

from viewlineage.indexer.config import load_settings
from viewlineage.indexer.errors import UsageError
from viewlineage.indexer.pipeline.runs import index_locations

from .conftest import CONFORMANCE, settings_for


def test_settings_layer_toml_then_environment_then_flags(tmp_path: Path) -> None:
    config = tmp_path / "viewlineage.toml"
    config.write_text('db = "from-toml.duckdb"\nbatch-files = 7\ncatalog-map = ["s3a://lake/wh=prod"]\n')
    settings = load_settings(
        config,
        environ={"VIEWLINEAGE_BATCH_FILES": "9", "VIEWLINEAGE_READ_WORKERS": "3"},
        flags={"read_workers": 5, "db": None},
    )
    assert (settings.db, settings.batch_files, settings.read_workers) == ("from-toml.duckdb", 9, 5)
    assert settings.parse_config().catalog_map[0].prefix == "s3://lake/wh"
    with pytest.raises(UsageError, match="batch-files: Input should be a valid integer"):
        load_settings(environ={"VIEWLINEAGE_BATCH_FILES": "zero"})
    with pytest.raises(UsageError, match="DIALECT:NAME=CATALOG"):
        load_settings(environ={}, flags={"catalog_alias": ("cobol:x=prod",)}).parse_config()


def test_lineage_is_memoised_across_runs_and_dialect_drift_is_found(tmp_path: Path) -> None:
    document = json.loads(
        (CONFORMANCE / "iceberg-spec" / "view-spec__appendixA__00001-metadata.json").read_text()
    )
    version = document["versions"][0]
    version["representations"].append(
        {"type": "sql", "dialect": "Trino", "sql": "SELECT * FROM other_events"}
    )
    version["representations"].append({"type": "sql", "dialect": "cobol", "sql": "MOVE A TO B"})
    metadata = tmp_path / "wh" / "default" / "event_agg" / "metadata"
    metadata.mkdir(parents=True)
    (metadata / "00001-a.metadata.json").write_text(json.dumps(document))
    db = tmp_path / "store.duckdb"
    first = index_locations([str(tmp_path / "wh")], settings_for(db))
    assert (first.lineage_computed, first.lineage_reused) == (2, 0)
    # The same SQL in a new file of another view: nothing is analysed again.
    document["view-uuid"] = "00000000-0000-4000-8000-000000000001"
    (metadata / "00002-b.metadata.json").write_text(json.dumps(document))
    second = index_locations([str(tmp_path / "wh")], settings_for(db))
    assert (second.indexed, second.lineage_computed, second.lineage_reused) == (1, 0, 2)
    with duckdb.connect(str(db), read_only=True) as conn:
        codes = conn.execute(
            "SELECT code, count(*) FROM findings WHERE code IN ('dialect-drift', 'unknown-dialect') "
            "GROUP BY ALL ORDER BY ALL"
        ).fetchall()
    assert codes == [("dialect-drift", 2), ("unknown-dialect", 2)]


@pytest.mark.parametrize(
    ("option", "entry"),
    [
        ("catalog_map", "/wh/ext=lake.ext"),
        ("catalog_alias", "trino:iceberg=lake.ext"),
        ("catalog_map", "/wh= "),
    ],
)
def test_a_catalog_is_one_name(tmp_path: Path, option: str, entry: str) -> None:
    """Found by the tenth new-user trial: `--catalog-map wh/ext=lake.ext` named a table
    `"lake.ext".partners`, which `table lake.ext.partners` then did not find."""
    with pytest.raises(UsageError, match=r"is not one name: a catalog is one identifier"):
        load_settings(None, {}, {"db": str(tmp_path / "x.duckdb"), option: (entry,)}).parse_config()
