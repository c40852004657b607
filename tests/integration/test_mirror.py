"""One short mirrored run on real 3.9 clusters: a 3-broker source, a 1-broker target,
MirrorMaker 2 in dedicated mode copying `orders` while a producer writes it and group
g0 consumes it; faults on all three: the source leader of orders-0 killed, MM2 killed
(mm2-kill) and later frozen (mm2-pause), the target's broker frozen (a selector's
`cluster: target`), then the link between MM2 and the source cut (link-partition,
iptables in MM2's network namespace); at the drain g0 fails over to the target (the built-in
mirror-mm2-kill, shortened, with failover on and checkpoints every 2 s).
Asserted from the history, not only the verdict: each fault was injected and healed,
the target's on the target's node; MM2 caught up (its committed offsets reached
every source partition's last record, a bounded wait); the mirror drain read the
target's mirrored topic, its rows naming the target cluster; every acknowledged
record the source's drain read is in the target topic; MM2's checkpoints of g0 are
`commits` rows paired source/target, and no translated offset skips a record; g0
resumed on the target at the offsets MM2 synced and read from there; the verdict
passes; and nothing of the run is left in Docker, the target's resources included."""
from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
import yaml

from clusters.docker_env import docker_client
from core.history import read_table

BUILT_IN = Path(__file__).resolve().parents[2] / "harness" / "scenarios" / "mirror-mm2-kill.yaml"


@pytest.mark.timeout(900)
def test_a_mirrored_topic_under_faults_on_source_target_and_mm2_then_a_failover(chaos_run, tmp_path):
    started = time.monotonic()
    scenario = yaml.safe_load(BUILT_IN.read_text())
    # between mm2-kill's heal (11) and mm2-pause (16-19): a link cut needs MM2 unpaused
    scenario["faults"]["timeline"].append({"at": 12, "fault": "link-partition", "hold": 3})
    path = tmp_path / "mirror-ci.yaml"
    path.write_text(yaml.safe_dump(scenario))
    result = chaos_run(str(path), "workload.duration_s=20", "workload.mirror.failover=true",
                       "workload.mirror.emit_checkpoints_interval_s=2")
    run_dir = result.run_dir
    summary = json.loads((run_dir / "report" / "summary.json").read_text())
    a = summary["anomalies"]
    assert a["mirror_lost"] == 0 and a["translation_skip"] == 0, a
    events = read_table(run_dir, "events").to_pandas()
    faults = events[events.kind.isin(["fault", "heal"])]
    assert sorted(faults[faults.kind == "heal"].name) == ["kill", "link-partition", "mm2-kill", "mm2-pause", "pause"]
    [cut] = [json.loads(d) for d in faults[(faults.kind == "fault") & (faults.name == "link-partition")].detail]
    assert cut.get("inject_error") is None, cut
    [paused] = [json.loads(d) for d in faults[(faults.kind == "fault") & (faults.name == "pause")].detail]
    assert paused["cluster"] == "target" and paused.get("inject_error") is None, paused
    [target_node] = faults[(faults.kind == "fault") & (faults.name == "pause")].target
    assert target_node, "the target's paused node is named"
    [caught] = [json.loads(d) for d in events[events.name == "mirror-caught-up"].detail]
    assert caught["caught_up"] is True, caught
    assert {p["partition"] for p in caught["partitions"]} == {0, 1, 2}
    assert summary["mirror"]["mm2_killed"] is True
    consumed = read_table(run_dir, "consumed").to_pandas()
    target = consumed[consumed.cluster == "target"]
    drained = target[target.phase == "drain"]
    assert set(drained.topic) == {"source.orders"}
    produced = read_table(run_dir, "produced").to_pandas().query("producer == 'p0'")
    acked = set(produced.query("status == 'acked'").record_id)
    source_drain = consumed[consumed.cluster.isna() & (consumed.phase == "drain")
                            & (consumed.topic == "orders")]
    judged = acked & set(source_drain.record_id)
    assert len(judged) > 1000, len(judged)                 # the load ran and was copied
    assert judged <= set(drained.record_id), sorted(judged - set(drained.record_id))[:5]
    # MM2's checkpoints of g0: pairs of commits rows, the source commit and its translation
    commits = read_table(run_dir, "commits").to_pandas()
    mirror = commits[commits.cluster.notna()]
    checkpoints = mirror[mirror.consumer.str.startswith("mm2-checkpoint:")]
    assert caught["checkpoints"] > 0 and len(checkpoints) == 2 * caught["checkpoints"], caught
    assert set(checkpoints[checkpoints.cluster == "target"].topic) == {"source.orders"}
    assert set(checkpoints.group_id) >= {"g0"}
    # the failover: g0 resumed on the target where MM2 synced it, and read from there
    [failover] = [json.loads(d) for d in events[events.name == "mirror-failover"].detail]
    # every last commit checkpointed and synced, or MM2 had nothing newer to say (it
    # checkpoints a commit only when its translation moves on)
    assert failover["synced"] or failover["settled"], failover
    g0 = failover["groups"]["g0"]
    assert set(g0["target"]) == {f"source.orders-{p}" for p in range(3)}, g0
    reads = target[(target.phase == "run") & (target.consumer == "failover-g0")]
    assert len(reads) == g0["read"]
    for p, rows in reads.groupby("partition"):
        assert rows.offset.min() >= g0["target"][f"source.orders-{p}"], (p, g0)
    assert (run_dir / "logs" / "mm2.log").stat().st_size > 0
    print(f"mirror: caught up after {caught['waited_s']} s; {caught['checkpoints']} checkpoints; "
          f"{a['translation_rewind']} rewinds; failover {g0}; "
          f"{a['mirror_duplicate']} copies beyond the source's; run {time.monotonic() - started:.0f} s")
    assert result.status == "passed", summary["verdict"]
    client = docker_client()
    for run_id in (run_dir.name, f"{run_dir.name}-mirror"):
        assert not client.containers.list(all=True, filters={"label": f"harness.run-id={run_id}"})
        assert not client.networks.list(filters={"label": f"harness.run-id={run_id}"})
