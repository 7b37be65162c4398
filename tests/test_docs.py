"""The README documents every setting and every store column (generated from the code)."""

from __future__ import annotations

from pathlib import Path

from viewlineage.indexer.batches import SCHEMAS
from viewlineage.indexer.config import Settings

README = (Path(__file__).parents[1] / "README.md").read_text()


def test_settings_are_documented() -> None:
    for name, info in Settings.model_fields.items():
        assert f"| `{info.alias or name}` | `VIEWLINEAGE_{name.upper()}` |" in README, name


def test_store_columns_are_documented() -> None:
    for table, schema in SCHEMAS.items():
        section = README.split(f"**`{table}`**", 1)
        assert len(section) == 2, table
        body = section[1].split("**`", 1)[0]
        for column in schema.names:
            assert f"| `{column}` |" in body, f"{table}.{column}"


def test_readme_starts_with_the_two_commands() -> None:
    block = README.split("```sh", 1)[1].split("```", 1)[0].strip().splitlines()
    assert [line.split("#")[0].strip() for line in block] == ["make demo", "make test"]
