"""The drain ends by itself, with a clear 'incomplete' result, when a partition has
no leader (its only replica's broker is stopped)."""
import json
import uuid

from core.history import read_table
from workloads.drain import drain
from workloads.producer import ProducerProcess
from workloads.spec import DrainSpec, ProducerSpec


def test_drain_reports_leaderless_partition_and_ends(run):
    cluster = run.cluster
    topic = f"wl-rf1-{uuid.uuid4().hex[:6]}"
    cluster.create_topic(topic, 3, 1, {"min.insync.replicas": "1"})
    # Fixed keys spread the records over all three partitions; unkeyed records go through
    # the sticky partitioner and 3000 small ones can all land in the victim's partition.
    p = ProducerProcess(ProducerSpec(name="p0", topic=topic, records=3000, keys="fixed"), run).start()
    try:
        assert p.wait(120) and p.exitcode == 0
    finally:
        if p.is_alive():
            p.kill()
    victim_part = cluster.partitions(topic)[0]
    victim = cluster.broker(victim_part.leader)
    victim.stop()
    try:
        r = drain(DrainSpec(topics=topic, timeout_s=40, stall_s=8), run)
        run.events.flush()
    finally:
        victim.start()
        cluster.wait_healthy(120)
    assert not r.complete and r.seconds < 60
    stuck = {(i["topic"], i["partition"]) for i in r.incomplete}
    assert (topic, victim_part.partition) in stuck
    assert len(stuck) < 3                      # the other partitions were drained
    produced = read_table(run.dir, "produced").to_pandas()
    readable = produced[~produced.partition.isin([p for _, p in stuck])]
    assert r.records == len(readable) > 0
    ev = read_table(run.dir, "events").to_pandas()
    res = [json.loads(d) for d in ev[ev.name == "drain-result"].detail]
    assert res and res[-1]["complete"] is False
    assert any(i["partition"] == victim_part.partition for i in res[-1]["incomplete"])
    assert {"drain-start", "drain-end"} <= set(ev[ev.kind == "phase"].name)
