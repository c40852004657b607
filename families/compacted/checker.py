"""The compacted family's checker: compaction_stale and compaction_resurrected
(docs/history.md, "Compacted topics") over its writers' `produced` rows and the
compacted drain's `consumed` rows.

Which writers and topics are the family's, and each topic's delete.retention.ms, come
from the run's `compacted-config` events; when the drain read each topic and how far
the cleaner had got per partition, from its `compacted-cleaned` event: a stored run is
judged by what it ran.

Per key (topic, key): its *last acked write* is the acked write at the highest offset.
The *compacted log* of the key is what the drain read of it (records of other writers,
such as the drain's roll records, have no key of ours). Each row is the key's last
acked write (its record_id, version, tombstone, offset, times: the explainer charges it
to the fault it was acknowledged under) beside what the log holds of the key: its last
record there (`held_*`), and for a tombstone the highest older value still there
(`older_*`). Readings of the spec chosen here:
- "a later indeterminate write": one of the key, not failed, sent at or after the last
  acked write was sent (its outcome unknown, it may have landed after it);
- compaction_resurrected also needs the cleaner to have passed the tombstone's offset
  (`cleaned_to` above it on the partition's leader): below the checkpoint an older value
  is a violation, above it the cleaner has simply not been there yet.
"""
from __future__ import annotations

import json

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from families.compacted.section import CLEANED_EVENT, CONFIG_EVENT
from families.records.checker import Inputs

KEY = ("topic", "key")
ROW_COLS = ("topic", "partition", "key", "record_id", "producer", "offset", "version",
            "tombstone", "send_ts_us", "ack_ts_us", "acked_by", "held_offset",
            "held_record_id", "held_version", "held_tombstone", "older_offset",
            "older_version", "later_indeterminate", "delete_retention_ms", "age_ms",
            "cleaned_to", "explain_at_us")


def compacted_params(events: list[dict]) -> tuple[dict[str, dict], dict[str, dict]]:
    """(writer -> its config, topic -> its cleaned event), from the run's events."""
    writers, cleaned = {}, {}
    for e in events:
        if e.get("kind") != "client":
            continue
        if e.get("name") == CONFIG_EVENT:
            writers[e["target"]] = json.loads(e.get("detail") or "{}")
        elif e.get("name") == CLEANED_EVENT:
            d = json.loads(e.get("detail") or "{}")
            cleaned[d["topic"]] = d
    return writers, cleaned


class CompactedFrames:
    """Per key: its last acked write and what the compacted log holds of it, built once."""

    def __init__(self, x: Inputs):
        self.writers, self.cleaned = compacted_params(x.events)
        spark = x.consumed.sparkSession
        self.params = spark.createDataFrame(
            [(w, d["topic"], int(d.get("delete_retention_ms") or 0)) for w, d in self.writers.items()],
            "producer string, topic string, delete_retention_ms long")
        self.partitions = spark.createDataFrame(
            [(t, int(p["partition"]), p.get("cleaned_to"), int(d.get("read_start_us") or 0))
             for t, d in self.cleaned.items() for p in d.get("partitions") or ()],
            "topic string, partition int, cleaned_to long, read_start_us long")
        writes = (x.tables["produced"].join(F.broadcast(self.params), ["producer", "topic"])
                  .select("topic", "partition", "key", "record_id", "producer", "offset", "status",
                          "version", "tombstone", "send_ts_us", "ack_ts_us", "acked_by",
                          "delete_retention_ms"))
        self.keys = self._last_acked(writes)
        self.log = self._log(x, writes)

    @staticmethod
    def _last_acked(writes: DataFrame) -> DataFrame:
        acked = writes.where(F.col("status") == "acked")
        last = Window.partitionBy(*KEY).orderBy(F.col("offset").desc())
        keys = (acked.withColumn("_n", F.row_number().over(last)).where(F.col("_n") == 1)
                .drop("_n", "status"))
        later = (writes.where(F.col("status") == "indeterminate")
                 .select(*KEY, F.col("send_ts_us").alias("_sent")))
        n_later = (keys.select(*KEY, "send_ts_us").join(later, list(KEY))
                   .where(F.col("_sent") >= F.col("send_ts_us"))
                   .groupBy(*KEY).agg(F.count(F.lit(1)).alias("later_indeterminate")))
        return (keys.join(n_later, list(KEY), "left")
                .withColumn("later_indeterminate", F.coalesce("later_indeterminate", F.lit(0))))

    @staticmethod
    def _log(x: Inputs, writes: DataFrame) -> DataFrame:
        """The drained records of the family's topics that its writers wrote, with their
        version and tombstone."""
        topics = writes.select("topic").distinct()
        read = (x.tables["consumed"].where(F.col("phase") == "drain")
                .join(F.broadcast(topics), "topic")
                .select("topic", "key", F.col("offset").alias("log_offset"), "record_id"))
        return read.join(writes.select("record_id", "version", "tombstone"), "record_id")

    def judged(self) -> DataFrame:
        """Every key with its last acked write, what the log holds, and the partition's
        cleaner checkpoint and read time."""
        last = Window.partitionBy(*KEY).orderBy(F.col("log_offset").desc())
        held = (self.log.withColumn("_n", F.row_number().over(last)).where(F.col("_n") == 1)
                .select(*KEY, F.col("log_offset").alias("held_offset"),
                        F.col("record_id").alias("held_record_id"),
                        F.col("version").alias("held_version"),
                        F.col("tombstone").alias("held_tombstone")))
        k = self.keys.join(held, list(KEY), "left")
        values = self.log.where(~F.col("tombstone")).select(
            *KEY, "log_offset", F.col("version").alias("_v"))
        older = (k.select(*KEY, "offset").join(values, list(KEY))
                 .where(F.col("log_offset") < F.col("offset"))
                 .groupBy(*KEY).agg(F.max(F.struct("log_offset", "_v")).alias("_o"))
                 .select(*KEY, F.col("_o.log_offset").alias("older_offset"),
                         F.col("_o._v").alias("older_version")))
        k = k.join(older, list(KEY), "left").join(F.broadcast(self.partitions),
                                                   ["topic", "partition"], "left")
        return (k.withColumn("age_ms", (F.col("read_start_us") - F.col("ack_ts_us")) / 1000)
                .withColumn("explain_at_us", F.col("ack_ts_us")))


def _frames(x: Inputs) -> CompactedFrames:
    return x.once("compacted", CompactedFrames)


def compaction_stale(x: Inputs) -> DataFrame:
    """A key whose last acked write is not a tombstone and whose value in the compacted
    log is an older version or absent, with no later indeterminate write of the key."""
    s = _frames(x)
    rows = s.judged().where(~F.col("tombstone") & (F.col("later_indeterminate") == 0)
                            & (F.col("held_offset").isNull()
                               | (F.col("held_offset") < F.col("offset"))))
    if not s.writers:
        x.no_rows.add("compaction_stale")
        return rows.select(*ROW_COLS).limit(0)
    return rows.select(*ROW_COLS)


def compaction_resurrected(x: Inputs) -> DataFrame:
    """A key whose last acked write is a tombstone older than delete.retention.ms when
    read, below the cleaner's checkpoint, of which the compacted log still holds an
    older value."""
    s = _frames(x)
    rows = s.judged().where(F.col("tombstone") & F.col("older_offset").isNotNull()
                            & (F.col("age_ms") > F.col("delete_retention_ms"))
                            & (F.col("offset") < F.col("cleaned_to")))
    if not s.writers:
        x.no_rows.add("compaction_resurrected")
        return rows.select(*ROW_COLS).limit(0)
    return rows.select(*ROW_COLS)
