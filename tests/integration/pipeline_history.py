"""What both pipeline integration tests (librdkafka's and Java's processor) assert of a
run's history: no pipeline kind, every acked input drained once, each key's counts
1..n, one kill and one restart, a count rebuilt on restore."""
from __future__ import annotations

import json
from collections import defaultdict

from core.history import read_table


def check_exactly_once_run(run_dir, summary: dict, min_acked: int):
    """The shared assertions; returns (acked record ids, the run's client events)."""
    a = summary["anomalies"]
    for kind in ("pipeline_lost", "pipeline_duplicate", "state_gap", "state_repeat", "lost"):
        assert a[kind] == 0, (kind, a)
    acked = set(read_table(run_dir, "produced").to_pandas().query("status == 'acked'").record_id)
    drained = read_table(run_dir, "consumed").to_pandas().query("phase == 'drain' and topic == 'out'")
    assert len(acked) > min_acked
    assert sorted(drained.source_record_id) == sorted(acked)          # each once, none missing
    counts = defaultdict(list)
    for row in drained.sort_values(["partition", "offset"]).itertuples():
        counts[row.key].append(row.key_count)
    assert all(c == list(range(1, len(c) + 1)) for c in counts.values()), counts
    m = summary["pipelines"]["pl0"]
    assert m["kills"] == 1 and m["restarts"] == 1, m
    events = read_table(run_dir, "events").to_pandas()
    mine = events[events.kind == "client"]
    restores = mine[mine.name == "pipeline-restore"]
    assert any(json.loads(d)["outputs"] > 0 for d in restores.detail), "no count was rebuilt"
    return acked, mine
