"""The mirror family's checker on hand-built histories, through the real pipeline:
mirror_lost and mirror_duplicate found where they are, and the look-alikes kept out:
a record whose produce was indeterminate (absent from the target: not lost), a record
the source itself lost (the records family's `lost`, not MM2's), a record on a source
partition MM2 had not caught up on (lag, not loss), a record the producer wrote twice
on the source (copied twice: not MM2's duplicate). mirror_duplicate is a violation
only with exactly-once support: without it the same history passes with the
duplicates counted. The records family never sees the target's copies (they would be
`duplicate`s of their source records)."""
from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest
from histories import T0, History

from families import FAMILIES
from spark_reports import pipeline
from verifiers.judgement import Judgement
from verifiers.verdict import judge

pytestmark = pytest.mark.spark

TOPIC, COPY = "orders", "source.orders"


class MirrorHistory(History):
    def __init__(self, run_dir, exactly_once: bool = False, behind: tuple[int, ...] = ()):
        super().__init__(run_dir)
        self.event("client", "mirror-config", T0, "mm2", json.dumps(
            {"source_version": "3.9.2", "target_version": "3.9.2", "exactly_once": exactly_once,
             "target_topics": {TOPIC: COPY}}))
        self.event("client", "mirror-caught-up", T0 + 60_000_000, "mm2", json.dumps(
            {"caught_up": not behind, "waited_s": 2.0, "partitions": [
                {"topic": TOPIC, "partition": p, "end_offset": 100, "committed": 99,
                 "behind": 5 if p in behind else 0, "caught_up": p not in behind}
                for p in (0, 1)]}))
        self.seq = 0

    def produce(self, partition: int, offset: int | None, status: str = "acked") -> str:
        s, self.seq = self.seq, self.seq + 1
        return self.send(TOPIC, "p0", s, status=status, partition=partition, offset=offset)

    def copy(self, partition: int, offset: int, rid: str) -> None:
        """The mirror drain read this record on the target."""
        self.w["consumed"].append({
            "consumer": "drain", "group_id": None, "phase": "drain", "topic": COPY,
            "partition": partition, "offset": offset, "record_id": rid,
            "isolation": "read_uncommitted", "recv_ts_us": self.tick(), "cluster": "target"})


def _history(tmp_path, exactly_once: bool) -> None:
    h = MirrorHistory(tmp_path, exactly_once=exactly_once, behind=(1,))
    # r0, r1: mirrored once each — fine
    for o in (0, 1):
        rid = h.produce(0, o)
        h.drain(TOPIC, 0, o, rid)
        h.copy(0, o, rid)
    # r2: LOST — acked, the source's drain read it, MM2 caught up, not on the target
    h.drain(TOPIC, 0, 2, h.produce(0, 2))
    # r3: DUPLICATE — at two target offsets (MM2 restarted, copied again)
    rid = h.produce(0, 3)
    h.drain(TOPIC, 0, 3, rid)
    h.copy(0, 2, rid)
    h.copy(0, 4, rid)
    # look-alike: an indeterminate produce, absent everywhere
    h.produce(0, None, status="indeterminate")
    # look-alike: acked but lost by the source itself (not in its drain): records' `lost`
    h.produce(0, 5)
    # look-alike: on partition 1, which MM2 had not caught up on: lag, not loss
    h.drain(TOPIC, 1, 0, h.produce(1, 0))
    # look-alike: the producer wrote it twice on the source (offsets 6, 7): two copies
    rid = h.produce(0, 6)
    h.drain(TOPIC, 0, 6, rid)
    h.drain(TOPIC, 0, 7, rid)
    h.copy(0, 5, rid)
    h.copy(0, 6, rid)
    h.close()


def _reconcile(run_dir, spark, exactly_once: bool):
    j = Judgement.without_model("unknown: a synthetic history", html=False)
    facts = {**j.facts, "mirror": True, "mirror_exactly_once": exactly_once}
    return pipeline.reconcile(
        str(run_dir), {"notes": [], "config": {}}, FAMILIES, j.threshold_s,
        lambda s, why: judge(s, j.expectations, facts, j.fact_sources), spark=spark,
        write_html=False)


def _rows(run_dir, kind: str) -> list[dict]:
    return pq.read_table(run_dir / "report" / "anomalies" / kind).to_pylist()


def test_each_mirror_kind_and_no_look_alike(tmp_path, spark):
    _history(tmp_path, exactly_once=True)
    done = _reconcile(tmp_path, spark, exactly_once=True)
    a = done.summary["anomalies"]
    assert a["mirror_lost"] == 1 and a["mirror_duplicate"] == 1, a
    [lost] = _rows(tmp_path, "mirror_lost")
    assert (lost["record_id"], lost["partition"], lost["offset"], lost["target_topic"]) == \
        ("p0-2", 0, 2, COPY)
    [dup] = _rows(tmp_path, "mirror_duplicate")
    assert (dup["record_id"], dup["target_copies"], dup["source_copies"]) == ("p0-3", 2, 1)
    assert dup["target_offsets"] == [f"{COPY}-0-2", f"{COPY}-0-4"]
    # the records family judged the source alone: its lost record, no copy as a duplicate
    assert a["lost"] == 1 and a["duplicate"] == 1, a       # p0-5; p0-6 at two source offsets
    assert done.summary["mirror"]["partitions_behind"][0]["partition"] == 1
    assert done.verdict.status == "failed"
    failures = " ".join(done.verdict.failures)
    assert "mirror_lost" in failures and "mirror_duplicate" in failures


def test_duplicates_without_exactly_once_are_counted_not_failed(tmp_path, spark):
    _history(tmp_path, exactly_once=False)
    done = _reconcile(tmp_path, spark, exactly_once=False)
    assert done.summary["anomalies"]["mirror_duplicate"] == 1
    failures = " ".join(done.verdict.failures)
    assert "mirror_duplicate" not in failures and "mirror_lost" in failures


def test_a_run_without_the_mirror_drain_judges_nothing(tmp_path, spark):
    """Interrupted before the mirror drain: no catch-up event, nothing of the target
    known, so no record is called lost."""
    h = History(tmp_path)
    h.event("client", "mirror-config", T0, "mm2", json.dumps(
        {"exactly_once": False, "target_topics": {TOPIC: COPY}}))
    rid = h.send(TOPIC, "p0", 0, partition=0, offset=0)
    h.drain(TOPIC, 0, 0, rid)
    h.close()
    done = _reconcile(tmp_path, spark, exactly_once=False)
    assert done.summary["anomalies"]["mirror_lost"] == 0
