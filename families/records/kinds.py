"""The records family's anomaly kinds: one producer path into consumer groups and the
final drain (the history spec's core rules)."""
from __future__ import annotations

from families.base import Kind, distinct
from families.records import checker as rows
from families.records.views import OFFSET

KINDS: tuple[Kind, ...] = (
    Kind("lost", rows.lost, distinct("record_id"),
         "acked record never consumed in any phase",
         "acknowledged records of {tp} were lost", "lost == 0 when durable",
         mark=("#000000", "x")),
    Kind("overwritten", rows.overwritten, distinct("record_id"),
         "acked at (partition, offset) but another record was consumed at that offset",
         "acknowledged records of {tp} were overwritten by other records", "overwritten == 0",
         mark=("#762a83", "D")),
    Kind("duplicate", rows.duplicate, distinct("record_id"),
         "one record_id consumed at two or more distinct positions",
         "records of {tp} were written at two or more offsets",
         "duplicate == 0 when idempotent"),
    Kind("reordered", rows.reordered, distinct("record_id"),
         "position offset lower than an earlier seq's on the same producer and partition",
         "records of {tp} sit below an earlier record of their producer",
         "reordered == 0 when idempotent"),
    Kind("unexpected", rows.unexpected, distinct("record_id"),
         "consumed record_id never sent, or failed outside a transaction",
         "records read from {tp} were never sent, or had failed", "unexpected == 0"),
    Kind("divergent", rows.divergent, distinct(*OFFSET),
         "different record_ids seen at the same (topic, partition, offset)",
         "offsets of {tp} held different records for different consumers", "divergent == 0"),
    Kind("skipped", rows.skipped, distinct("group_id", *OFFSET),
         "group committed past an offset the drain saw but the group never received",
         "offsets of {tp} were committed past by {group}, which never received them",
         "skipped == 0 when commit_after_processing"),
    Kind("redelivered", rows.redelivered, ("sum", ("extra_deliveries",)),
         "extra deliveries of one position to one group in run (counted, not a fault)",
         "extra deliveries of {tp} went to {group}, which had them already", bad=False),
    Kind("recovered", rows.recovered, distinct("record_id"),
         "indeterminate record that was consumed (counted, not a fault)",
         "records of {tp} whose outcome was unknown are in the log", bad=False),
    Kind("poll_skip", rows.poll_skip, distinct("consumer", *OFFSET),
         "a consumer jumped over a record it could read, inside one assignment",
         "offsets of {tp} were jumped over by {consumer} inside one assignment",
         "poll_skip == 0"),
    Kind("nonmonotonic_poll", rows.nonmonotonic_poll, ("rows", ()),
         "a consumer went back to an offset, inside one assignment",
         "deliveries of {tp} went back to an earlier offset for {consumer} inside one assignment",
         "nonmonotonic_poll == 0"),
)
