"""What SQL resolution depends on besides the SQL and the version's defaults: a frozen value
derived once from the settings (`viewlineage.indexer.config.Settings`)."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class LineageConfig:
    """What SQL resolution needs beyond the SQL and the version's defaults."""

    aliases: Mapping[tuple[str, str], str] = field(default_factory=dict)
    """(canonical dialect, engine catalog name) -> catalog, all lower-case."""
    catalogs: frozenset[str] = frozenset()
    """Catalogs known from the catalog map: a name's first part is a catalog only if known."""

    def fingerprint(self) -> str:
        """A short stable digest, part of the lineage memo key."""
        text = repr((sorted(self.aliases.items()), sorted(self.catalogs)))
        return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()
