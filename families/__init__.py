"""Workload families: one package per delivery path (families/base.py says what a
family owns). The registry below is the one place a new family is added.

The composed lists (every kind, by name) are what the pipeline, the report and the
expectations read; a family's own kinds are its own.
"""
from __future__ import annotations

from collections.abc import Iterable

from families import compacted, mirror, pipelines, records, shares, transactions
from families.base import Family, Kind

# The registry: one line per family, in the order the report shows them.
FAMILIES: tuple[Family, ...] = (
    records.FAMILY,
    transactions.FAMILY,
    shares.FAMILY,
    pipelines.FAMILY,
    compacted.FAMILY,
    mirror.FAMILY,
)

KINDS: tuple[Kind, ...] = tuple(k for f in FAMILIES for k in f.kinds)
NAMES: tuple[str, ...] = tuple(k.name for k in KINDS)
COUNTS: tuple[str, ...] = tuple(c for f in FAMILIES for c in f.counts)
_BY_NAME = {k.name: k for k in KINDS}


def by_name(name: str) -> Kind:
    return _BY_NAME[name]


def named_by(section, families: Iterable[Family] = FAMILIES) -> tuple[Family, ...]:
    """The families a scenario's workload section names (None, a run whose scenario is
    unknown: every family, so nothing goes unchecked)."""
    return tuple(f for f in families if section is None or f.named_by(section))


def anomaly_frames(x, families: Iterable[Family] = FAMILIES) -> dict:
    """Every named family's kinds' offending rows (checker Inputs -> name -> DataFrame)."""
    return {k.name: k.rows(x) for f in families for k in f.kinds}
