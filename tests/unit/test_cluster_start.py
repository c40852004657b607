"""DockerCluster's start without Docker (issue 37): which nodes start together, in
what order the cluster keeps them, what a failed start leaves for stop(),
and ensure_images without the build lock."""
import threading
import time
from contextlib import contextmanager

import pytest

from clusters import images
from clusters.docker_cluster import DockerCluster
from clusters.spec import ClusterSpec
from clusters.versions import resolve_version


class FakeNode:
    def __init__(self, plan):
        self.name, self.role, self.node_id = plan.alias, plan.role, plan.node_id
        self.state = "running"

    def status(self):
        return self.state

    def logs(self):
        return "line 1\nFATAL it broke"


def recording_cluster(spec, delay=0.0, fail=()):
    """A cluster whose _start_node records when each container was made (and sleeps
    `delay`, as Docker does), failing for aliases in `fail`."""
    cluster = DockerCluster(spec, run_id="unit")
    cluster.starts = []
    lock = threading.Lock()

    def start_node(plan, **_):
        with lock:
            cluster.starts.append((plan.alias, [n.name for n in cluster._nodes]))
        time.sleep(delay)
        if plan.alias in fail:
            raise RuntimeError(f"docker refused {plan.alias}")
        return FakeNode(plan)
    cluster._start_node = start_node
    return cluster


def test_kafka_nodes_start_together_and_keep_plan_order():
    cluster = recording_cluster(ClusterSpec.kraft_isolated("4.3", 3, 1), delay=0.3)
    started = time.monotonic()
    cluster._start_nodes()
    # one after another this would take 4 x 0.3 s
    assert time.monotonic() - started < 0.9
    assert [n.name for n in cluster._nodes] == ["controller-1", "broker-1", "broker-2", "broker-3"]


def test_zookeeper_first_then_its_user_then_brokers():
    cluster = recording_cluster(ClusterSpec.zookeeper("3.9", 3, 1), delay=0.05)
    cluster.security = object()          # secured: the SCRAM user goes in before any broker
    order = []
    cluster._zookeeper_user = lambda: order.append(("user", [n.name for n in cluster._nodes]))
    cluster._start_nodes()
    assert cluster.starts[0] == ("zk-1", [])
    assert order == [("user", ["zk-1"])]
    # every broker was started after ZooKeeper's node existed
    assert all(before == ["zk-1"] for alias, before in cluster.starts[1:])
    assert [n.name for n in cluster._nodes] == ["zk-1", "broker-1", "broker-2", "broker-3"]


def test_a_failed_node_start_raises_after_the_others_are_recorded():
    cluster = recording_cluster(ClusterSpec.kraft_combined("4.3", 3), delay=0.1, fail={"kafka-2"})
    with pytest.raises(RuntimeError, match="kafka-2"):
        cluster._start_nodes()
    # the nodes that did start are known (their logs, stop()), none is still being made
    assert [n.name for n in cluster._nodes] == ["kafka-1", "kafka-3"]


def test_ensure_images_takes_no_build_lock_when_every_image_exists(monkeypatch):
    @contextmanager
    def no_lock():
        raise AssertionError("the build lock was taken")
        yield
    monkeypatch.setattr(images, "_build_lock", no_lock)
    monkeypatch.setattr(images, "_image_exists", lambda tag: True)
    tags = images.ensure_images(["4.3"], toxiproxy=True)
    kv = resolve_version("4.3")
    assert tags == {"base": images.base_image_tag(), f"kafka-{kv.version}": images.kafka_image_tag(kv),
                    "toxiproxy": images.toxiproxy_image_tag()}


def test_ensure_images_builds_under_the_lock_when_one_is_missing(monkeypatch):
    taken, built = [], []

    @contextmanager
    def lock():
        taken.append(True)
        yield
    missing = images.toxiproxy_image_tag()
    monkeypatch.setattr(images, "_build_lock", lock)
    monkeypatch.setattr(images, "_image_exists", lambda tag: tag != missing)
    monkeypatch.setattr(images, "ensure_toxiproxy_image", lambda force=False: built.append(1) or missing)
    images.ensure_images(["4.3"], toxiproxy=True)
    assert taken == [True] and built == [1]
