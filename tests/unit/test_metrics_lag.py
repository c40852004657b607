"""families.records.throughput._lag_series: consumer lag per second and the longest stall (claim 12)."""
from families.records.throughput import _lag_series
from verifiers.verdict import metric_value


def test_a_stall_is_seconds_with_records_waiting_and_nothing_new_received():
    # acked-minus-delivered per second: 10 acked at 0 s, delivered at 1 s; then 5 acked
    # a second from 2 s on, nothing delivered at 3, 4 and 5 s, all 20 delivered at 6 s
    change = {0: 10, 1: -10, 2: 5, 3: 5, 4: 5, 5: 5, 6: -20}
    delivered = {1: 10, 6: 20}
    series, stall = _lag_series(change, delivered)
    assert [s["lag"] for s in series] == [10, 0, 5, 10, 15, 20, 0]
    assert stall == 3            # 3, 4 and 5 s: waiting at their start, nothing received


def test_no_records_waiting_is_no_stall():
    series, stall = _lag_series({0: 0, 1: 0, 2: 3, 3: -3}, {3: 3})
    assert stall == 0 and series[-1]["lag"] == 0


def test_the_summary_metric_is_the_largest_over_the_groups():
    summary = {"metrics": {"consumer_lag": [{"group_id": "a", "longest_stall_s": 2},
                                            {"group_id": "b", "longest_stall_s": 7}]}}
    assert metric_value(summary, "max_consumer_stall_s") == (7, None)
    old = {"metrics": {"consumer_lag": [{"group_id": "a", "per_second": []}]}}
    assert metric_value(old, "max_consumer_stall_s")[0] is None
