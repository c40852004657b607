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


def _n(n) -> str:
    return f"{n:,}".replace(",", "\u2009")       # thin spaces: 10 412, as the report writes


def _resume(r: dict, run) -> str:
    commit = f"{r['topic']}-{r['partition']}:{_n(r['committed_offset'])}"
    at = f"{r['target_topic']}-{r['partition']}:{_n(r['translated_offset'])}"
    if str(r.get("checkpoint") or "").startswith("failover:"):
        return (f"group {r['group_id']} failing over at {run.at(r.get('explain_at_us'))} "
                f"resumed on the target at {at} (its offset there, synced by MirrorMaker 2; "
                f"its last source commit {commit})")
    return (f"group {r['group_id']} on the target would resume at {at} (MirrorMaker 2's "
            f"checkpoint at {run.at(r.get('explain_at_us'))} of its source commit {commit})")


def _translation_words(r: dict, run, which: str) -> str:
    n = r["checkpoint_records"]
    return (f"{_resume(r, run)}; {_n(n)} record{'s' if n != 1 else ''} {which}, among them "
            f"{r['record_id']} at {r['topic']}-{r['partition']}:{_n(r['offset'])}, copied to "
            f"{r['target_topic']}-{r['partition']}:{_n(r['target_offset'])}.")


def skip_words(r: dict, run) -> str:
    return _translation_words(r, run, "between its source commit and that offset would be skipped")


def rewind_words(r: dict, run) -> str:
    return _translation_words(r, run, "it had consumed before that commit would be read again")


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
    Kind("translation_skip", rows.translation_skip,
         distinct("group_id", "topic", "partition", "offset"),
         "a record after a group's committed source offset that lies before its translated "
         "target offset (MirrorMaker 2's checkpoint): a consumer failing over would skip it",
         "records of {tp} would be skipped by {group} failing over to the target",
         "translation_skip == 0", mark=("#17becf", "<"), row_words=skip_words),
    Kind("translation_rewind", rows.translation_rewind,
         distinct("group_id", "topic", "partition", "offset"),
         "a record before a group's committed source offset that lies at or after its "
         "translated target offset: a consumer failing over reads it again (counted: "
         "Kafka documents translated offsets as possibly behind)",
         "records of {tp} would be read again by {group} failing over to the target",
         bad=False, row_words=rewind_words),
)
