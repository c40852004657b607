"""The mirror family's checker: mirror_lost and mirror_duplicate (docs/history.md,
"Mirrored topics") over the source producers' `produced` rows, the source's final
drain and the mirror drain's rows (`consumed.cluster = 'target'`, the pipeline's
`consumed_target` frame: the other families never see a mirrored copy).

Which source topics were mirrored to which target topics, and whether MM2 ran with
exactly-once support, come from the run's `mirror-config` event; how far MM2 had
caught up per source partition when the drain read the target, from its
`mirror-caught-up` event: a stored run is judged by what it ran. Readings chosen here:
- mirror_lost judges a record only where it is MM2's to lose: an acked record the
  source's own drain read (an acked record the source lost is the records family's
  `lost`), on a source partition MM2 had caught up on (a partition it had not reached
  is lag, said by the family's metrics, not loss);
- mirror_duplicate counts the target offsets a record is at beyond the source offsets
  it is at: a record the producer itself wrote twice (a retry without idempotence) is
  copied twice by a faithful mirror.
"""
from __future__ import annotations

import json

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from families.mirror.section import CAUGHT_UP_EVENT, CONFIG_EVENT
from families.records.checker import Inputs

LOST_COLS = ("record_id", "producer", "topic", "partition", "offset", "target_topic",
             "send_ts_us", "ack_ts_us", "acked_by", "explain_at_us")
DUP_COLS = ("record_id", "producer", "topic", "partition", "offset", "target_topic",
            "target_copies", "source_copies", "target_offsets", "ack_ts_us", "explain_at_us")


def mirror_params(events: list[dict]) -> tuple[dict | None, dict | None]:
    """(the mirror's config, its catch-up wait), from the run's events (None: absent)."""
    config = caught = None
    for e in events:
        if e.get("kind") == "client" and e.get("name") == CONFIG_EVENT:
            config = json.loads(e.get("detail") or "{}")
        elif e.get("kind") == "client" and e.get("name") == CAUGHT_UP_EVENT:
            caught = json.loads(e.get("detail") or "{}")
    return config, caught


class MirrorFrames:
    """The mirrored source records, with their copies on the source and the target."""

    def __init__(self, x: Inputs):
        self.config, self.caught = mirror_params(x.events)
        spark = x.consumed.sparkSession
        topics = (self.config or {}).get("target_topics") or {}
        self.topics = spark.createDataFrame(list(topics.items()),
                                            "topic string, target_topic string")
        self.partitions = spark.createDataFrame(
            [(p["topic"], int(p["partition"]), bool(p["caught_up"]))
             for p in (self.caught or {}).get("partitions") or ()],
            "topic string, partition int, caught_up boolean")
        self.produced = (x.tables["produced"].join(F.broadcast(self.topics), "topic")
                         .where(F.col("record_id").isNotNull()))
        source = (x.tables["consumed"].where((F.col("phase") == "drain")
                                             & F.col("record_id").isNotNull())
                  .join(F.broadcast(self.topics.select("topic")), "topic"))
        self.source_copies = (source.groupBy("record_id").agg(
            F.countDistinct("topic", "partition", "offset").alias("source_copies")))
        target = x.tables.get("consumed_target")
        if target is None:
            target = x.consumed.limit(0)
        self.target_copies = (target.where((F.col("phase") == "drain")
                                           & F.col("record_id").isNotNull())
                              .groupBy("record_id").agg(
            F.countDistinct("topic", "partition", "offset").alias("target_copies"),
            F.sort_array(F.collect_set(F.concat_ws(
                "-", "topic", "partition", "offset"))).alias("target_offsets")))

    @property
    def judged(self) -> bool:
        """The mirror drain ran: without it (interrupted), nothing of the target is known."""
        return self.config is not None and self.caught is not None


def _frames(x: Inputs) -> MirrorFrames:
    return x.once("mirror", MirrorFrames)


def mirror_lost(x: Inputs) -> DataFrame:
    """An acked source record, read by the source's drain, on a source partition MM2 had
    caught up on, absent from the drained target topic."""
    m = _frames(x)
    rows = (m.produced.where(F.col("status") == "acked")
            .join(m.source_copies, "record_id")
            .join(F.broadcast(m.partitions.where(F.col("caught_up"))), ["topic", "partition"])
            .join(m.target_copies, "record_id", "left_anti")
            .withColumn("explain_at_us", F.col("ack_ts_us")))
    if not m.judged:
        x.no_rows.add("mirror_lost")
        return rows.select(*LOST_COLS).limit(0)
    return rows.select(*LOST_COLS)


def mirror_duplicate(x: Inputs) -> DataFrame:
    """A source record at more offsets of the target topic than of the source topic."""
    m = _frames(x)
    rows = (m.produced.join(m.target_copies, "record_id")
            .join(m.source_copies, "record_id", "left")
            .withColumn("source_copies", F.coalesce("source_copies", F.lit(1)))
            .where(F.col("target_copies") > F.col("source_copies"))
            .withColumn("explain_at_us", F.col("ack_ts_us")))
    if not m.judged:
        x.no_rows.add("mirror_duplicate")
        return rows.select(*DUP_COLS).limit(0)
    return rows.select(*DUP_COLS)
