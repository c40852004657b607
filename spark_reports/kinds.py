"""Every anomaly kind of the history spec, each one object in one list.

A kind is everything the harness says or does about it: the function that finds its
rows (spark_reports/anomalies.py), how they are counted (the spec's counting rule),
the rule and the words the report prints, the expectation every run checks unless
told otherwise, whether a count above zero is bad news, and how the leadership plot
marks it. The reconciler, the report, the plots and the expectations all read this
list, so adding a kind is one entry here and one row function.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from spark_reports import anomalies as rows
from spark_reports.reconcile import OFFSET


@dataclass(frozen=True)
class Kind:
    name: str
    rows: Callable                      # Inputs -> DataFrame of its offending rows
    # how its written rows are counted: ("distinct", keys), ("sum", (column,)), ("rows", ())
    count_by: tuple[str, tuple[str, ...]]
    rule: str                           # the spec's definition, as the report shows it
    words: str                          # "<n> {words}", with {tp} the topic-partition
    default: str | None = None          # the expectation every run checks by default
    bad: bool = True                    # a count above zero is an anomaly, not a cost
    mark: tuple[str, str] | None = None  # (colour, marker) on the leadership plot


def _distinct(*keys: str) -> tuple[str, tuple[str, ...]]:
    return ("distinct", keys)


KINDS: tuple[Kind, ...] = (
    Kind("lost", rows.lost, _distinct("record_id"),
         "acked record never consumed in any phase",
         "acknowledged records of {tp} were lost", "lost == 0 when durable",
         mark=("#000000", "x")),
    Kind("overwritten", rows.overwritten, _distinct("record_id"),
         "acked at (partition, offset) but another record was consumed at that offset",
         "acknowledged records of {tp} were overwritten by other records", "overwritten == 0",
         mark=("#762a83", "D")),
    Kind("duplicate", rows.duplicate, _distinct("record_id"),
         "one record_id consumed at two or more distinct positions",
         "records of {tp} were written at two or more offsets",
         "duplicate == 0 when idempotent"),
    Kind("reordered", rows.reordered, _distinct("record_id"),
         "position offset lower than an earlier seq's on the same producer and partition",
         "records of {tp} sit below an earlier record of their producer",
         "reordered == 0 when idempotent"),
    Kind("unexpected", rows.unexpected, _distinct("record_id"),
         "consumed record_id never sent, or failed outside a transaction",
         "records read from {tp} were never sent, or had failed", "unexpected == 0"),
    Kind("divergent", rows.divergent, _distinct(*OFFSET),
         "different record_ids seen at the same (topic, partition, offset)",
         "offsets of {tp} held different records for different consumers", "divergent == 0"),
    Kind("aborted_read", rows.aborted_read, _distinct("record_id"),
         "read_committed consumer saw a record of an aborted transaction",
         "records of aborted transactions on {tp} reached a read_committed consumer",
         "aborted_read == 0"),
    Kind("torn_transaction", rows.torn_transaction, _distinct("producer", "txn_seq"),
         "a transaction not all-or-nothing: committed and partly consumed, or aborted and "
         "partly seen by read_committed",
         "transactions writing to {tp} were torn: only part of them is visible",
         "torn_transaction == 0", mark=("#e08214", "P")),
    Kind("skipped", rows.skipped, _distinct("group_id", *OFFSET),
         "group committed past an offset the drain saw but the group never received",
         "offsets of {tp} were committed past by a group that never received them",
         "skipped == 0 when commit_after_processing"),
    Kind("redelivered", rows.redelivered, ("sum", ("extra_deliveries",)),
         "extra deliveries of one position to one group in run (counted, not a fault)",
         "extra deliveries of {tp} went to a group that had them already", bad=False),
    Kind("recovered", rows.recovered, _distinct("record_id"),
         "indeterminate record that was consumed (counted, not a fault)",
         "records of {tp} whose outcome was unknown are in the log", bad=False),
    Kind("poll_skip", rows.poll_skip, _distinct("consumer", *OFFSET),
         "a consumer jumped over a record it could read, inside one assignment",
         "offsets of {tp} were jumped over by a consumer inside one assignment",
         "poll_skip == 0"),
    Kind("nonmonotonic_poll", rows.nonmonotonic_poll, ("rows", ()),
         "a consumer went back to an offset, inside one assignment",
         "deliveries of {tp} went back to an earlier offset inside one assignment",
         "nonmonotonic_poll == 0"),
)

NAMES: tuple[str, ...] = tuple(k.name for k in KINDS)
_BY_NAME = {k.name: k for k in KINDS}


def by_name(name: str) -> Kind:
    return _BY_NAME[name]


def anomaly_frames(x) -> dict:
    """Every kind's offending rows (anomalies.Inputs -> name -> DataFrame)."""
    return {k.name: k.rows(x) for k in KINDS}
