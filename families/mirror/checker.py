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

translation_skip and translation_rewind judge each of MM2's checkpoints (a group's
committed source offset S and its translation T on the target: the `commits_mirror`
rows, families/mirror/checkpoints.py) against where the records are: a record's
source offset is where the source's drain read it, its target offsets where the
mirror drain read its copies (joined by record_id; MM2 keeps partition numbers).
- translation_skip: a record at or after S on the source whose every copy lies before
  T (a consumer failing over at T never reads it);
- translation_rewind: a record before S on the source with a copy at or after T (it
  is read again).
A record with no copy on the target is mirror_lost's, not a translation's. Each
(group, source position) is one row, charged to the first checkpoint that moved it.
"""
from __future__ import annotations

import json

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from families.mirror.section import CAUGHT_UP_EVENT, CONFIG_EVENT
from families.records.checker import Inputs

LOST_COLS = ("record_id", "producer", "topic", "partition", "offset", "target_topic",
             "send_ts_us", "ack_ts_us", "acked_by", "explain_at_us")
TRANSLATION_COLS = ("group_id", "topic", "partition", "offset", "record_id", "target_topic",
                    "target_offset", "committed_offset", "translated_offset", "checkpoint",
                    "checkpoint_records", "checkpoints", "explain_at_us")
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


def _checkpoints(x: Inputs) -> DataFrame:
    """One row per MM2 checkpoint: group, source (topic, partition), its committed
    source offset, its translation (target topic, offset), when MM2 wrote it."""
    c = x.tables.get("commits_mirror")
    if c is None:
        c = x.tables["commits"].limit(0)
    source = c.where(F.col("cluster") == "source").select(
        F.col("consumer").alias("checkpoint"), "group_id", "topic", "partition",
        F.col("offset").alias("committed_offset"), F.col("ts_us").alias("checkpoint_us"))
    target = c.where(F.col("cluster") == "target").select(
        F.col("consumer").alias("checkpoint"), F.col("topic").alias("target_topic"),
        F.col("offset").alias("translated_offset"))
    return source.join(target, "checkpoint")


def _placed(x: Inputs) -> DataFrame:
    """Each mirrored record's source position (the source's drain) with its last copy
    on the target (the mirror drain), on the same partition number."""
    m = _frames(x)
    source = (x.tables["consumed"].where((F.col("phase") == "drain")
                                         & F.col("record_id").isNotNull())
              .join(F.broadcast(m.topics), "topic")
              .select("record_id", "topic", "partition", "offset", "target_topic"))
    target = x.tables.get("consumed_target")
    if target is None:
        target = x.consumed.limit(0)
    copies = (target.where((F.col("phase") == "drain") & F.col("record_id").isNotNull())
              .groupBy("record_id", F.col("topic").alias("target_topic"), "partition")
              .agg(F.max("offset").alias("target_offset")))
    return source.join(copies, ["record_id", "target_topic", "partition"])


def _translation(x: Inputs, kind: str, moved) -> DataFrame:
    """The records `moved(placed, checkpoint)` says a checkpoint moved, one row per
    (group, source position): the first checkpoint that did, how many records that
    checkpoint moved, and how many checkpoints moved this record."""
    m = _frames(x)
    cp = _checkpoints(x)
    pairs = (_placed(x).join(cp, ["topic", "partition", "target_topic"]).where(moved))
    per_cp = Window.partitionBy("checkpoint")
    per_pos = Window.partitionBy("group_id", "topic", "partition", "offset")
    first = Window.partitionBy("group_id", "topic", "partition", "offset").orderBy(
        "checkpoint_us", "checkpoint")
    rows = (pairs.withColumn("checkpoint_records", F.count(F.lit(1)).over(per_cp))
            .withColumn("checkpoints", F.count(F.lit(1)).over(per_pos))
            .withColumn("_n", F.row_number().over(first)).where(F.col("_n") == 1)
            .withColumn("explain_at_us", F.col("checkpoint_us")))
    if not m.judged:
        x.no_rows.add(kind)
        return rows.select(*TRANSLATION_COLS).limit(0)
    return rows.select(*TRANSLATION_COLS)


def translation_skip(x: Inputs) -> DataFrame:
    """A record at or after a group's committed source offset whose every copy lies
    before the checkpoint's translated target offset."""
    return _translation(x, "translation_skip",
                        (F.col("offset") >= F.col("committed_offset"))
                        & (F.col("target_offset") < F.col("translated_offset")))


def translation_rewind(x: Inputs) -> DataFrame:
    """A record before a group's committed source offset with a copy at or after the
    checkpoint's translated target offset."""
    return _translation(x, "translation_rewind",
                        (F.col("offset") < F.col("committed_offset"))
                        & (F.col("target_offset") >= F.col("translated_offset")))
