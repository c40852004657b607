"""Words that name who: a run comparing two consumer groups (one on KIP-848, one
classic) must say which group had the extra deliveries, and which consumer jumped."""
from __future__ import annotations

import pyarrow as pa

from families import by_name
from spark_reports.anomaly_output import explanations
from spark_reports.explain import RunFacts, explain


def _rows(**cols):
    n = len(next(iter(cols.values())))
    base = {"topic": ["orders"] * n, "partition": [1] * n, "leader_at_ack": [None] * n,
            "elected_leader_at_ack": [None] * n, "fault_id": [None] * n,
            "ack_ts_us": [None] * n, "faults_at_ack": [None] * n}
    return pa.table({**base, **cols})


def test_redeliveries_are_grouped_and_told_per_group():
    rows = _rows(group_id=["g-848", "g-848", "g-classic"], offset=[1, 2, 1],
                 extra_deliveries=[100, 138, 5])
    groups = explanations(rows, by_name("redelivered"))
    by_group = {g["group"]: g["count"] for g in groups}
    assert by_group == {"g-848": 238, "g-classic": 5}
    words = [explain("redelivered", g, RunFacts(0)) for g in groups]
    assert words[0].startswith("238 extra deliveries of orders-1 went to group g-848, "
                               "which had them already")
    assert "group g-classic" in words[1]


def test_a_consumers_jump_names_the_consumer_and_old_summaries_still_read():
    rows = _rows(consumer=["g1c0"], group_id=["g1"], offset=[7])
    (g,) = explanations(rows, by_name("poll_skip"))
    assert "jumped over by consumer g1c0 inside one assignment" in explain("poll_skip", g, RunFacts(0))
    # a summary stored before groups were named has no group in its explanation groups
    old = {"topic": "orders", "partition": 1, "count": 3, "first_ack_us": None, "fault_id": None}
    assert "went to a group, which had them already" in explain("redelivered", old, RunFacts(0))
