"""What parsing depends on besides the bytes: a frozen value derived once from the settings
(`viewlineage.indexer.config.Settings`)."""

from __future__ import annotations

from dataclasses import dataclass, field

from viewlineage.indexer.lineage.config import LineageConfig

MiB = 1024 * 1024


@dataclass(frozen=True, slots=True)
class CatalogMapEntry:
    prefix: str
    catalog: str | None
    """None for an indexed root that no --catalog-map entry covers: names are relative to it."""


@dataclass(frozen=True, slots=True)
class ParseConfig:
    """Everything the pure parse stage depends on besides the bytes."""

    max_decompressed_bytes: int = 256 * MiB
    max_sql_length: int = MiB
    """Longest SQL (characters) whose lineage is analysed: sqlglot's memory grows ~10x the text."""
    max_json_values: int = 4 * 1024 * 1024
    """Most JSON values (counted from commas and brackets) a document may hold: as Python objects
    each costs ~64 bytes whatever its size in the text (`[]` is 2 bytes, its list 56)."""
    catalog_map: tuple[CatalogMapEntry, ...] = ()
    lineage: LineageConfig = field(default_factory=LineageConfig)

    def __post_init__(self) -> None:
        catalogs = frozenset(entry.catalog for entry in self.catalog_map if entry.catalog)
        if not catalogs <= self.lineage.catalogs:
            lineage = LineageConfig(aliases=self.lineage.aliases, catalogs=self.lineage.catalogs | catalogs)
            object.__setattr__(self, "lineage", lineage)

    def catalog_for(self, location: str) -> CatalogMapEntry | None:
        """The catalog-map entry with the longest prefix that contains `location`."""
        best: CatalogMapEntry | None = None
        for entry in self.catalog_map:
            prefix = entry.prefix
            if (location == prefix or location.startswith(prefix + "/")) and (
                best is None or len(prefix) > len(best.prefix)
            ):
                best = entry
        return best
