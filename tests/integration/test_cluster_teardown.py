"""Nothing leaks: not after a failed start, not after Ctrl-C or SIGTERM."""
from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from clusters import storage
from clusters.docker_cluster import ClusterUnhealthy, DockerCluster
from clusters.docker_env import docker_client
from clusters.labels import RUN_ID
from clusters.spec import ClusterSpec

ROOT = Path(__file__).resolve().parents[2]


def leftovers(run_id: str) -> tuple[int, int, bool]:
    client = docker_client()
    flt = {"label": f"{RUN_ID}={run_id}"}
    return (len(client.containers.list(all=True, filters=flt)),
            len(client.networks.list(filters=flt)),
            storage.run_mount_dir(run_id).exists())


def test_failed_start_removes_everything():
    # Kafka refuses a negative thread count and exits: start() must fail and clean up.
    cluster = DockerCluster(ClusterSpec.kraft_combined("3.9").with_config({"num.io.threads": -3}))
    with pytest.raises(ClusterUnhealthy) as e:
        cluster.start(timeout=90)
    assert "exited" in str(e.value)
    assert leftovers(cluster.run_id) == (0, 0, False)


# The holder restores Python's own SIGINT handler: a shell starting a job in the
# background without job control (`cmd &` in a script, as a CI runner may) hands it
# SIGINT ignored, and Python then never raises KeyboardInterrupt.
HOLDER = """
import signal, sys, time
signal.signal(signal.SIGINT, signal.default_int_handler)
sys.path.insert(0, {root!r})
from clusters.docker_cluster import DockerCluster
from clusters.spec import ClusterSpec
with DockerCluster(ClusterSpec.kraft_combined("3.9", nodes=1)) as c:
    print("UP", c.run_id, flush=True)
    time.sleep(600)
"""


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_interrupted_holder_tears_down(sig):
    proc = subprocess.Popen([sys.executable, "-c", HOLDER.format(root=str(ROOT))],
                            stdout=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline().split()
        assert line[:1] == ["UP"], line
        run_id = line[1]
        containers, networks, mounted = leftovers(run_id)
        assert containers == 1 and networks == 1 and mounted
        proc.send_signal(sig)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    deadline = time.monotonic() + 10
    while leftovers(run_id) != (0, 0, False) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert leftovers(run_id) == (0, 0, False)
