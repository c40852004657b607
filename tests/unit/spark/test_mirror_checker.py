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
from histories import T0, History, anomaly_rows, reconcile

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


def test_each_mirror_kind_and_no_look_alike(tmp_path, spark):
    _history(tmp_path, exactly_once=True)
    done = reconcile(tmp_path, spark, {"mirror": True, "mirror_exactly_once": True})
    a = done.summary["anomalies"]
    assert a["mirror_lost"] == 1 and a["mirror_duplicate"] == 1, a
    [lost] = anomaly_rows(tmp_path, "mirror_lost")
    assert (lost["record_id"], lost["partition"], lost["offset"], lost["target_topic"]) == \
        ("p0-2", 0, 2, COPY)
    [dup] = anomaly_rows(tmp_path, "mirror_duplicate")
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
    done = reconcile(tmp_path, spark, {"mirror": True, "mirror_exactly_once": False})
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
    done = reconcile(tmp_path, spark, {"mirror": True, "mirror_exactly_once": False})
    assert done.summary["anomalies"]["mirror_lost"] == 0


def _checkpoint(h: History, n: int, group: str, partition: int, committed: int,
                translated: int, topic: str = TOPIC, copy: str = COPY) -> None:
    """MM2's checkpoint n as the mirror drain writes it: two commits rows, paired by
    their consumer (families/mirror/checkpoints.py)."""
    ts = h.tick()
    for cluster, t, offset in (("source", topic, committed), ("target", copy, translated)):
        h.w["commits"].append({"consumer": f"mm2-checkpoint:0:{n}", "group_id": group,
                               "topic": t, "partition": partition, "offset": offset,
                               "ok": True, "error": None, "ts_us": ts, "cluster": cluster})


def _translations(tmp_path, skip: bool) -> None:
    """orders-0 holds r0..r9 (the source's drain); the target holds r0..r8 at the same
    offsets and r3 once more at 9 (MM2 copied it again); r9 never reached it."""
    h = MirrorHistory(tmp_path)
    rids = [h.produce(0, o) for o in range(10)]
    for o, rid in enumerate(rids):
        h.drain(TOPIC, 0, o, rid)
    for o, rid in enumerate(rids[:9]):
        h.copy(0, o, rid)
    h.copy(0, 9, rids[3])
    _checkpoint(h, 0, "g0", 0, committed=4, translated=4)    # exact: r3's second copy at 9 is re-read
    _checkpoint(h, 1, "g0", 0, committed=8, translated=6)    # behind: r3, r6, r7 read again
    if skip:
        # ahead: r2 and r4 skipped; r3 not (a copy at 9), r9 not (never copied: mirror_lost)
        _checkpoint(h, 2, "g1", 0, committed=2, translated=5)
    # look-alike: a checkpoint of a topic not mirrored in this run
    _checkpoint(h, 3, "g2", 0, committed=0, translated=100, topic="other", copy="source.other")
    h.close()


def test_translation_skip_and_rewind_found_per_checkpoint_and_no_look_alike(tmp_path, spark):
    _translations(tmp_path, skip=True)
    done = reconcile(tmp_path, spark, {"mirror": True, "mirror_exactly_once": False})
    a = done.summary["anomalies"]
    assert a["translation_skip"] == 2 and a["translation_rewind"] == 3, a
    skips = sorted(anomaly_rows(tmp_path, "translation_skip"), key=lambda r: r["offset"])
    assert [(r["group_id"], r["record_id"], r["offset"], r["target_offset"]) for r in skips] == \
        [("g1", "p0-2", 2, 2), ("g1", "p0-4", 4, 4)]
    assert {(r["committed_offset"], r["translated_offset"], r["checkpoint_records"])
            for r in skips} == {(2, 5, 2)}
    rewinds = {r["record_id"]: r for r in anomaly_rows(tmp_path, "translation_rewind")}
    assert set(rewinds) == {"p0-3", "p0-6", "p0-7"}
    assert rewinds["p0-3"]["checkpoints"] == 2 and rewinds["p0-3"]["translated_offset"] == 4
    # r9; the checkpoints' source rows are not the group's own commits (no run consumer
    # read orders: the records family would call 8 records skipped)
    assert a["mirror_lost"] == 1 and a["skipped"] == 0, a
    failures = " ".join(done.verdict.failures)
    assert "translation_skip" in failures and "translation_rewind" not in failures
    from families.mirror.kinds import skip_words

    class Run:
        def at(self, us):
            return "+1.0 s"
    said = skip_words(skips[0], Run())
    assert said.startswith("group g1 on the target would resume at source.orders-0:5 "), said
    assert "2 records between its source commit and that offset would be skipped" in said


def test_translated_offsets_behind_are_counted_not_failed(tmp_path, spark):
    _translations(tmp_path, skip=False)
    done = reconcile(tmp_path, spark, {"mirror": True, "mirror_exactly_once": False})
    a = done.summary["anomalies"]
    assert a["translation_skip"] == 0 and a["translation_rewind"] == 3, a
    assert "translation" not in " ".join(done.verdict.failures)


def test_a_stored_run_without_the_commits_cluster_column_still_reads(tmp_path, spark):
    """A history written before commits had `cluster`: its commits are the consumers'
    own, and no translation is judged."""
    import pyarrow as pa

    from core.history import SCHEMAS
    h = MirrorHistory(tmp_path)
    rid = h.produce(0, 0)
    h.drain(TOPIC, 0, 0, rid)
    h.copy(0, 0, rid)
    h.close()
    old = pa.table({"run_id": ["cases"], "consumer": ["c0"], "group_id": ["g0"],
                    "topic": [TOPIC], "partition": pa.array([0], pa.int32()),
                    "offset": pa.array([1], pa.int64()), "ok": [True], "error": [None],
                    "ts_us": pa.array([T0], pa.int64())},
                   schema=pa.schema([f for f in SCHEMAS["commits"] if f.name != "cluster"]))
    commits = tmp_path / "history" / "commits"
    for f in commits.glob("*.parquet"):
        f.unlink()
    pq.write_table(old, commits / "old-0.parquet")
    done = reconcile(tmp_path, spark, {"mirror": True, "mirror_exactly_once": False})
    a = done.summary["anomalies"]
    assert a["translation_skip"] == 0 and a["translation_rewind"] == 0, a
    # the old commit is read as the group's own: it committed past p0-0, which no run
    # consumer of g0 received
    assert a["skipped"] == 1, a
