"""The compacted family's checker on hand-built histories, through the real pipeline:
compaction_stale and compaction_resurrected found where they are, and the look-alikes
kept out: a key whose last write was indeterminate, a tombstone still within
delete.retention.ms (it and its older value may both still be read), a key
overwritten after a tombstone, a tombstone above the cleaner's checkpoint, and a
tombstone the cleaner removed after delete.retention.ms. The records family does not
count the cleaned-away writes as `lost`."""
from __future__ import annotations

import json

import pytest
from histories import T0, History, anomaly_rows, reconcile

pytestmark = pytest.mark.spark

S = 1_000_000
MS = 1000
TOPIC = "state"
RETENTION_MS = 5000
READ_AT = T0 + 100 * S          # the drain reads 100 s after T0


class CompactedHistory(History):
    def __init__(self, run_dir, cleaned_to: int = 1000):
        super().__init__(run_dir)
        self.seq = 0
        self.event("client", "compacted-config", T0, "cw0", json.dumps(
            {"topic": TOPIC, "keys": 8, "tombstone_rate": 0.1,
             "delete_retention_ms": RETENTION_MS, "seed": 1}))
        self.event("client", "compacted-cleaned", READ_AT, "cw0", json.dumps(
            {"topic": TOPIC, "passed": True, "waited_s": 3.0, "read_start_us": READ_AT,
             "partitions": [{"partition": 0, "roll_offset": cleaned_to, "leader": 1,
                             "cleaned_to": cleaned_to, "passed": True}]}))

    def write(self, key: str, version: int, offset: int | None, *, tombstone: bool = False,
              status: str = "acked", at_s: float = 10.0) -> str:
        """One write of the compacted writer cw0; returns its record_id."""
        s, self.seq = self.seq, self.seq + 1
        rid = f"cw0-{s}"
        sent = T0 + int(at_s * S)
        self.w["produced"].append({
            "producer": "cw0", "seq": s, "record_id": rid, "key": key, "topic": TOPIC,
            "partition": 0, "offset": offset if status == "acked" else None, "status": status,
            "send_ts_us": sent, "ack_ts_us": sent + 500 if status != "indeterminate" else None,
            "version": version, "tombstone": tombstone})
        return rid

    def read(self, key: str, offset: int, rid: str | None) -> None:
        """The compacted drain read this record (a tombstone's record_id from its header)."""
        self.w["consumed"].append({
            "consumer": "drain", "group_id": None, "phase": "drain", "topic": TOPIC,
            "partition": 0, "offset": offset, "key": key, "record_id": rid,
            "isolation": "read_uncommitted", "recv_ts_us": READ_AT + offset})


def _history(tmp_path) -> CompactedHistory:
    h = CompactedHistory(tmp_path)
    # k0: v0, v1 (last, kept) — fine; v0 cleaned away (not `lost`)
    h.write("k0", 0, 0)
    h.read("k0", 1, h.write("k0", 1, 1))
    # k1: STALE — last acked v2 at offset 4, the log holds v1 at offset 3
    h.write("k1", 0, 2)
    h.read("k1", 3, h.write("k1", 1, 3))
    h.write("k1", 2, 4)
    # k2: STALE — last acked v0 at offset 5, the log holds nothing of it
    h.write("k2", 0, 5)
    # k3: look-alike — last acked v0, then an indeterminate tombstone sent after it: the
    # log holding nothing is what the tombstone would do
    h.write("k3", 0, 6)
    h.write("k3", 1, None, tombstone=True, status="indeterminate", at_s=11)
    # k4: RESURRECTED — tombstone (offset 8) acked at 10 s, read at 100 s (> 5 s), below
    # the checkpoint; the log still holds v0 at offset 7
    h.read("k4", 7, h.write("k4", 0, 7))
    h.write("k4", 1, 8, tombstone=True)
    # k5: look-alike — tombstone within delete.retention.ms when read (acked 97 s): the
    # tombstone and the older value may both still be there
    h.read("k5", 9, h.write("k5", 0, 9, at_s=96))
    h.read("k5", 10, h.write("k5", 1, 10, tombstone=True, at_s=97))
    # k6: look-alike — a tombstone then a new value: the value is the latest, kept
    h.write("k6", 0, 11)
    h.write("k6", 1, 12, tombstone=True)
    h.read("k6", 13, h.write("k6", 2, 13))
    # k7: a tombstone the cleaner removed after delete.retention.ms, nothing older: fine
    h.write("k7", 0, 14)
    h.write("k7", 1, 15, tombstone=True)
    h.close()
    return h


def test_each_compacted_kind_and_no_look_alike(tmp_path, spark):
    _history(tmp_path)
    done = reconcile(tmp_path, spark)
    a = done.summary["anomalies"]
    assert a["compaction_stale"] == 2
    assert a["compaction_resurrected"] == 1
    # the records family does not count the cleaned-away writes as lost
    assert a["lost"] == 0 and a["unexpected"] == 0
    stale = sorted(anomaly_rows(tmp_path, "compaction_stale"), key=lambda r: r["key"])
    assert [(r["key"], r["version"], r["offset"], r["held_version"], r["held_offset"])
            for r in stale] == [("k1", 2, 4, 1, 3), ("k2", 0, 5, None, None)]
    assert stale[0]["explain_at_us"] == stale[0]["ack_ts_us"]
    res = anomaly_rows(tmp_path, "compaction_resurrected")
    assert [(r["key"], r["offset"], r["tombstone"], r["older_version"], r["older_offset"])
            for r in res] == [("k4", 8, True, 0, 7)]
    assert res[0]["age_ms"] > RETENTION_MS
    assert done.verdict.status == "failed"
    assert any("compaction_stale" in f for f in done.verdict.failures)


def test_tombstone_above_the_cleaners_checkpoint_is_not_judged(tmp_path, spark):
    """The cleaner had reached offset 8 only: k4's tombstone (offset 8) is not below it,
    so its older value may simply not have been cleaned yet."""
    h = CompactedHistory(tmp_path, cleaned_to=8)
    h.read("k4", 7, h.write("k4", 0, 7))
    h.write("k4", 1, 8, tombstone=True)
    h.close()
    done = reconcile(tmp_path, spark)
    assert done.summary["anomalies"]["compaction_resurrected"] == 0
    assert done.summary["anomalies"]["compaction_stale"] == 0
