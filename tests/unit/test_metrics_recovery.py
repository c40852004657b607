"""metrics.recovery from histogram rows: each fault reads the send segments at or after
its own injection (histograms() keys a record by how many injections precede its send)."""
from __future__ import annotations

from spark_reports.metrics import recovery, tp_key
from spark_reports.timeline import FaultWindow, Timeline

S = 1_000_000
TOPICS = ["t"]


def _fault(i: int, start_s: int) -> FaultWindow:
    return FaultWindow(f"f{i}", "leader_kill", None, start_s * S, start_s * S + 3 * S, True)


def test_a_later_segment_counts_for_every_earlier_fault():
    tl = Timeline(faults=[_fault(0, 10), _fault(1, 20)])
    touched = {0: ([("t", 0), ("t", 1)], "all"), 1: ([("t", 1)], "all")}
    t0, t1 = tp_key(TOPICS, "t", 0), tp_key(TOPICS, "t", 1)
    # (segment, tp, n, first ack, last ack): partition 0 acks again only after the
    # second fault's injection; partition 1 in both segments
    hist = {"recovery": [(1, t1, 5, 12.5 * S, 19 * S), (2, t0, 3, 24 * S, 30 * S),
                         (2, t1, 4, 21 * S, 29 * S)]}
    first, second = recovery(tl, touched, hist, TOPICS)
    assert first["partitions"] == {"t-0": 14.0, "t-1": 2.5}
    assert first["seconds"] == 14.0
    assert second["partitions"] == {"t-1": 1.0}      # segment 1 is before its injection
    assert second["seconds"] == 1.0


def test_a_partition_that_never_acks_again_has_no_recovery():
    tl = Timeline(faults=[_fault(0, 10), _fault(1, 20)])
    touched = {0: ([("t", 0)], "all"), 1: ([("t", 0)], "all")}
    hist = {"recovery": [(1, tp_key(TOPICS, "t", 0), 1, 11 * S, 11 * S)]}
    first, second = recovery(tl, touched, hist, TOPICS)
    assert first["seconds"] == 1.0
    assert second["seconds"] is None and second["never_acked_after"] == ["t-0"]


def test_faults_injected_at_the_same_instant_share_a_segment():
    tl = Timeline(faults=[_fault(0, 10), _fault(1, 10)])
    touched = {0: ([("t", 0)], "all"), 1: ([("t", 0)], "all")}
    hist = {"recovery": [(1, tp_key(TOPICS, "t", 0), 2, 10.5 * S, 12 * S)]}
    assert [r["seconds"] for r in recovery(tl, touched, hist, TOPICS)] == [0.5, 0.5]
