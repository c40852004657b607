"""One short mirrored run on real 3.9 clusters: a 3-broker source, a 1-broker target,
MirrorMaker 2 in dedicated mode copying `orders` while a producer writes it; MM2 is
killed (SIGKILL) and started again, and the source leader of orders-0 is killed,
mid-load (the built-in mirror-mm2-kill, shortened).
Asserted from the history, not only the verdict: MM2 was killed and restarted; it
caught up (its committed offsets
reached every source partition's last record, a bounded wait); the mirror drain read
the target's mirrored topic, its rows naming the target cluster; every acknowledged
record the source's drain read is in the target topic; no copy made twice beyond
what the source holds is called a violation (MM2 runs at least once here); the verdict
passes; and nothing of the run is left in Docker, the target's resources included."""
from __future__ import annotations

import json
import time

import pytest

from clusters.docker_env import docker_client
from core.history import read_table

SCENARIO = "mirror-mm2-kill"


@pytest.mark.timeout(900)
def test_a_mirrored_topic_under_an_mm2_kill_and_a_source_leader_kill(chaos_run):
    started = time.monotonic()
    result = chaos_run(SCENARIO, "workload.duration_s=20")
    run_dir = result.run_dir
    summary = json.loads((run_dir / "report" / "summary.json").read_text())
    a = summary["anomalies"]
    assert a["mirror_lost"] == 0, a
    events = read_table(run_dir, "events").to_pandas()
    assert set(events.name) >= {"mirror-mm2-killed", "mirror-mm2-restarted"}
    [caught] = [json.loads(d) for d in events[events.name == "mirror-caught-up"].detail]
    assert caught["caught_up"] is True and caught["mm2_killed"] is True, caught
    assert {p["partition"] for p in caught["partitions"]} == {0, 1, 2}
    consumed = read_table(run_dir, "consumed").to_pandas()
    target = consumed[consumed.cluster == "target"]
    assert set(target.topic) == {"source.orders"} and set(target.phase) == {"drain"}
    produced = read_table(run_dir, "produced").to_pandas().query("producer == 'p0'")
    acked = set(produced.query("status == 'acked'").record_id)
    source_drain = consumed[consumed.cluster.isna() & (consumed.phase == "drain")
                            & (consumed.topic == "orders")]
    judged = acked & set(source_drain.record_id)
    assert len(judged) > 1000, len(judged)                 # the load ran and was copied
    assert judged <= set(target.record_id), sorted(judged - set(target.record_id))[:5]
    assert (run_dir / "logs" / "mm2.log").stat().st_size > 0
    assert summary["mirror"]["caught_up"] is True
    print(f"mirror: caught up after {caught['waited_s']} s; "
          f"{a['mirror_duplicate']} copies beyond the source's; run {time.monotonic() - started:.0f} s")
    assert result.status == "passed", summary["verdict"]
    client = docker_client()
    for run_id in (run_dir.name, f"{run_dir.name}-mirror"):
        assert not client.containers.list(all=True, filters={"label": f"harness.run-id={run_id}"})
        assert not client.networks.list(filters={"label": f"harness.run-id={run_id}"})
