"""The mirror family's anomaly kinds: what MirrorMaker 2 promises a disaster-recovery
site (every acknowledged record reaches the target; with exactly-once support, once)."""
from __future__ import annotations

from families.base import Kind, distinct
from families.mirror import checker as rows


def lost_words(r: dict, run) -> str:
    return (f"record {r['record_id']} acknowledged at {run.at(r.get('ack_ts_us'))} at "
            f"{r['topic']}-{r['partition']}:{r['offset']} (the source's drain read it) is not "
            f"in {r['target_topic']} on the target, though MirrorMaker 2 had committed "
            "past it.")


def duplicate_words(r: dict, run) -> str:
    return (f"record {r['record_id']} ({r['topic']}-{r['partition']}:{r['offset']}) is at "
            f"{r['target_copies']} offsets of {r['target_topic']} on the target "
            f"({', '.join(r.get('target_offsets') or [])}), {r['source_copies']} on the source.")


KINDS: tuple[Kind, ...] = (
    Kind("mirror_lost", rows.mirror_lost, distinct("record_id"),
         "an acked source record (read by the source's drain, on a partition MirrorMaker 2 "
         "had caught up on) absent from the drained target topic",
         "acknowledged records of {tp} never reached the target cluster",
         "mirror_lost == 0", mark=("#8c564b", "v"), row_words=lost_words),
    Kind("mirror_duplicate", rows.mirror_duplicate, distinct("record_id"),
         "a source record at more offsets of the target topic than of the source topic "
         "(a violation when MirrorMaker 2 runs with exactly-once support)",
         "records of {tp} were copied to the target more than once",
         "mirror_duplicate == 0 when mirror_exactly_once", mark=("#e377c2", "^"),
         row_words=duplicate_words),
)
