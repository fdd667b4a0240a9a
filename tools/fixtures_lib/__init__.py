"""The golden fixtures and conformance cases of BinLog, as code (see tools/gen_fixtures.py)."""

from __future__ import annotations

from . import (
    catalog_crash,
    catalog_damage,
    catalog_decisions,
    catalog_decisions_legacy,
    catalog_decisions_reader,
    catalog_decisions_writer,
    catalog_index,
    catalog_legacy,
    catalog_reach,
    catalog_split,
    catalog_tolerant,
    catalog_valid,
    catalog_writer,
)
from .catalog import Catalog


def build_catalog() -> Catalog:
    """Every fixture and case, in a fixed order."""
    cat = Catalog()
    for module in (
        catalog_valid,
        catalog_crash,
        catalog_damage,
        catalog_tolerant,
        catalog_legacy,
        catalog_split,
        catalog_writer,
        catalog_reach,
        catalog_decisions,
        catalog_decisions_reader,
        catalog_decisions_writer,
        catalog_decisions_legacy,
        catalog_index,
    ):
        module.add(cat)
    return cat


__all__ = ["Catalog", "build_catalog"]
