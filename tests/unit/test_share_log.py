"""A share member's journal becomes share_deliveries rows: decisions and answers matched
to the oldest open delivery at their position, a member that died leaving rows with
ack_result unknown (never silence), and converting a run twice writing the rows once."""
from __future__ import annotations

import json

import pyarrow.parquet as pq

from workloads.classify import share_ack_result
from workloads.share_log import ShareLogConverter, journal_path, reconcile_share_run

T = 1_000_000


def _lines(*events: dict) -> list[str]:
    return [json.dumps(e) for e in events]


def _convert(*events: dict) -> tuple[list[dict], ShareLogConverter]:
    c = ShareLogConverter("s0", "g")
    for line in _lines(*events):
        c.feed(line)
    return c.finish(), c


def recv(ts, *offsets, count=1):
    return {"ev": "recv", "ts": ts, "recs": [["q", 0, o, count, f"p0-{o} x"] for o in offsets]}


def test_explicit_decisions_and_answers_become_rows():
    rows, c = _convert(recv(T, 0, 1, 2),
                       {"ev": "ack", "acks": [["q", 0, 0, "accept", T + 1], ["q", 0, 1, "release", T + 2],
                                              ["q", 0, 2, "reject", T + 3]]},
                       {"ev": "result", "ts": T + 9, "parts": [["q", 0, [0, 1]]], "err": None},
                       {"ev": "result", "ts": T + 9, "parts": [["q", 0, [2]]],
                        "err": "INVALID_RECORD_STATE"})
    by = {r["offset"]: r for r in rows}
    assert [(by[o]["ack"], by[o]["ack_result"]) for o in (0, 1, 2)] == [
        ("accept", "ok"), ("release", "ok"), ("reject", "error")]
    assert by[0]["record_id"] == "p0-0" and by[0]["ack_ts_us"] == T + 1
    assert by[2]["ack_error"] == "INVALID_RECORD_STATE"
    assert c.result.unresolved == 0


def test_a_member_killed_after_deciding_or_before_leaves_unknown_rows():
    rows, c = _convert(recv(T, 0, 1), {"ev": "ack", "acks": [["q", 0, 0, "accept", T + 1]]})
    by = {r["offset"]: r for r in rows}
    assert (by[0]["ack"], by[0]["ack_result"]) == ("accept", "unknown")     # decided, no answer
    assert (by[1]["ack"], by[1]["ack_result"]) == (None, "unknown")         # never decided
    assert c.result.unresolved == 2


def test_one_member_holding_two_deliveries_of_an_offset_is_matched_in_order():
    rows, _ = _convert(recv(T, 5), {"ev": "ack", "acks": [["q", 0, 5, "accept", T + 1]]},
                       recv(T + 20, 5, count=2),      # its lock expired; it got the record again
                       {"ev": "result", "ts": T + 21, "parts": [["q", 0, [5]]],
                        "err": "INVALID_RECORD_STATE"},
                       {"ev": "ack", "acks": [["q", 0, 5, "accept", T + 22]]},
                       {"ev": "result", "ts": T + 23, "parts": [["q", 0, [5]]], "err": None})
    assert [(r["delivery_count"], r["ack_result"]) for r in rows] == [(1, "error"), (2, "ok")]


def test_a_refused_acknowledge_and_a_cut_line():
    rows, c = _convert(recv(T, 3), {"ev": "refused", "ts": T + 5, "acks": [["q", 0, 3, "release"]],
                                    "err": "IllegalStateException"})
    c.feed('{"ev": "recv", "ts": 7, "recs": [["q", 0')            # a SIGKILL mid-line
    assert [(r["ack"], r["ack_result"], r["ack_error"]) for r in rows] == [
        ("release", "error", "IllegalStateException")]


def test_answers_classify_only_ok_and_definite_refusals_as_facts():
    assert share_ack_result(None) == "ok"
    assert share_ack_result("INVALID_RECORD_STATE") == "error"
    assert share_ack_result("InvalidRecordStateException") == "error"
    for maybe in ("NOT_LEADER_OR_FOLLOWER", "_TRANSPORT", "NotLeaderOrFollowerException",
                  "_TIMED_OUT", "DisconnectException"):
        assert share_ack_result(maybe) == "unknown"


def test_reconciling_a_run_is_idempotent(tmp_path):
    path = journal_path(tmp_path, "g", "s0")
    path.parent.mkdir(parents=True)
    path.write_text("\n".join(_lines(recv(T, 0, 1))) + "\n")
    first = reconcile_share_run(tmp_path, "r1")
    assert (first["journals"], first["rows"], first["unresolved"]) == (1, 2, 2)
    assert reconcile_share_run(tmp_path, "r1")["journals"] == 0
    path.with_name(path.name + ".converted").unlink()       # converted again: same file
    reconcile_share_run(tmp_path, "r1")
    assert pq.read_table(tmp_path / "history" / "share_deliveries").num_rows == 2


def _two_deliveries_then(*answers: dict) -> list[dict]:
    """Member s0 gets offset 5, accepts, gets it again (the leader moved: the old one,
    resumed, and the new one both hand it out), accepts again; then the answers."""
    rows, _ = _convert(recv(T, 5, count=2), {"ev": "ack", "acks": [["q", 0, 5, "accept", T + 1]]},
                       recv(T + 600, 5, count=3), {"ev": "ack", "acks": [["q", 0, 5, "accept", T + 700]]},
                       *answers)
    return rows


def test_overlapping_deliveries_answered_differently_are_both_unknown():
    # the callback names the offset, not the delivery: which accept was confirmed is not known
    # (benchmarks/evidence/share-ack-across-coordinator-pause/4.1.2-java-seed2)
    rows = _two_deliveries_then(
        {"ev": "result", "ts": T + 800, "parts": [["q", 0, [5]]], "err": None},
        {"ev": "result", "ts": T + 900, "parts": [["q", 0, [5]]],
         "err": "UnknownTopicOrPartitionException"})
    assert [(r["delivery_count"], r["ack_result"], r["ack_error"]) for r in rows] == [
        (2, "unknown", "ambiguous: UnknownTopicOrPartitionException|ok"),
        (3, "unknown", "ambiguous: UnknownTopicOrPartitionException|ok")]
    assert all("_overlap" not in r for r in rows)


def test_overlapping_deliveries_answered_alike_or_one_never_answered():
    alike = _two_deliveries_then(*[{"ev": "result", "ts": T + 800 + i, "parts": [["q", 0, [5]]],
                                    "err": None} for i in range(2)])
    assert [r["ack_result"] for r in alike] == ["ok", "ok"]          # a double accept stays one
    one = _two_deliveries_then({"ev": "result", "ts": T + 800, "parts": [["q", 0, [5]]], "err": None})
    assert [(r["ack_result"], r["ack_error"]) for r in one] == [     # the ok may be either's
        ("unknown", "ambiguous: no answer|ok"), ("unknown", "ambiguous: no answer|ok")]
