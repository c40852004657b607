"""The typed summary: summary.json read and written back unchanged, old or new."""
from __future__ import annotations

import json

from spark_reports.summary import Summary

STORED = {
    "run_id": "kh-1", "counts": {"sent": 10, "acked": 9, "consumed": 9}, "anomalies": {"lost": 1},
    "metrics": {"max_unavailability_s": 2.5, "unavailability": []},
    "config": {"facts": {"durable": True}}, "notes": ["n"],
    "verdict": {"status": "failed", "failures": ["lost: 1 > 0"], "checks": []},
    "verify_seconds": 3.2, "generated_at": "2026-11-25T10:00:00+00:00",
    # a key this version does not know (a later one's, or a family's) is kept as it was
    "share_groups": {"g": {"deliveries": 4}},
}


def test_a_stored_summary_round_trips_and_reads_typed():
    s = Summary.from_json(json.dumps(STORED))
    assert (s.run_id, s.count("acked"), s.anomalies["lost"]) == ("kh-1", 9, 1)
    assert (s.status, s.failures, s.max_unavailability_s) == ("failed", ["lost: 1 > 0"], 2.5)
    assert s.extra == {"share_groups": {"g": {"deliveries": 4}}}
    again = json.loads(s.to_json())
    assert {k: v for k, v in again.items() if k in STORED} == STORED
    # the JSON form's reading still works for code written against summary.json
    assert s["counts"]["sent"] == 10 and s.get("nope", 0) == 0 and "share_groups" in s


def test_an_empty_or_old_summary_has_defaults_not_errors():
    s = Summary.from_dict({"run_id": "old", "verdict": None})
    assert (s.status, s.failures, s.count("sent"), s.problems) == ("unknown", [], 0, [])
