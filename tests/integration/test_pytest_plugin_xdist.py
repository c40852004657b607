"""The pytest plugin under pytest-xdist: two workers run their own 1-broker clusters
side by side (both up at once, a barrier makes sure), each sees only its own
records on a topic of the same name, and every name carries the worker id."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import docker

INNER = textwrap.dedent('''
    import json, os, time
    from pathlib import Path

    import docker
    from confluent_kafka import Consumer, Producer

    OUT = Path(os.environ["PLUGIN_XDIST_OUT"])

    def _barrier(worker):
        (OUT / f"{worker}.up").touch()
        deadline = time.monotonic() + 300
        while len(list(OUT.glob("*.up"))) < 2:
            assert time.monotonic() < deadline, "the other worker's cluster never came up"
            time.sleep(0.5)

    def _case(kafka_cluster, tag):
        worker = os.environ["PYTEST_XDIST_WORKER"]
        start = time.time()
        _barrier(worker)
        # the same topic name in both clusters: a shared broker would mix the records
        kafka_cluster.create_topic("shared-name", partitions=1, replication_factor=1)
        boot = kafka_cluster.bootstrap_servers()
        p = Producer({"bootstrap.servers": boot})
        for i in range(200):
            p.produce("shared-name", f"{worker}-{i}".encode())
        assert p.flush(30) == 0
        c = Consumer({"bootstrap.servers": boot, "group.id": "g", "auto.offset.reset": "earliest"})
        c.subscribe(["shared-name"])
        seen, deadline = [], time.monotonic() + 60
        while len(seen) < 200 and time.monotonic() < deadline:
            m = c.poll(1.0)
            if m is not None and m.error() is None:
                seen.append(m.value().decode())
        extra = c.poll(3.0)
        c.close()
        names = sorted(x.name for x in docker.from_env().containers.list(
            filters={"label": f"harness.run-id={kafka_cluster.run_id}"}))
        (OUT / f"{worker}.json").write_text(json.dumps({
            "worker": worker, "run_id": kafka_cluster.run_id, "containers": names, "seen": seen,
            "extra": None if extra is None or extra.error() else extra.value().decode(),
            "bootstrap": boot, "start": start, "end": time.time()}))

    def test_a(kafka_cluster):
        _case(kafka_cluster, "a")

    def test_b(kafka_cluster):
        _case(kafka_cluster, "b")
''')


def test_two_xdist_workers_run_clusters_side_by_side(tmp_path):
    (tmp_path / "test_inner.py").write_text(INNER)
    out = tmp_path / "out"
    out.mkdir()
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", "2", "-p", "no:cacheprovider",
                           str(tmp_path / "test_inner.py")],
                          capture_output=True, text=True, timeout=900, cwd=tmp_path,
                          env={**os.environ, "PLUGIN_XDIST_OUT": str(out)})
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    results = [json.loads(p.read_text()) for p in sorted(out.glob("*.json"))]
    assert sorted(r["worker"] for r in results) == ["gw0", "gw1"]
    for r in results:
        assert r["run_id"].endswith("-" + r["worker"])
        assert r["containers"] and all(r["run_id"] in name for name in r["containers"])
        assert r["seen"] == [f"{r['worker']}-{i}" for i in range(200)] and r["extra"] is None
    a, b = results
    assert a["bootstrap"] != b["bootstrap"]
    assert a["start"] < b["end"] and b["start"] < a["end"]      # the clusters were up at once
    left = [c.name for c in docker.from_env().containers.list(all=True)
            if c.labels.get("harness.run-id") in {a["run_id"], b["run_id"]}]
    assert left == []                                            # session end stopped both
