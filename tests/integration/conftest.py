"""Real-cluster fixtures. Every test here needs a Docker engine (README set-up)."""
from __future__ import annotations

import pytest

from clusters.docker_cluster import DockerCluster
from clusters.spec import ClusterSpec


@pytest.fixture
def cluster_factory(tmp_path):
    """Start clusters on demand; every one is stopped (and its logs kept under
    tmp_path/logs) at teardown, whatever the test did."""
    started: list[DockerCluster] = []

    def make(spec: ClusterSpec, **kw) -> DockerCluster:
        cluster = DockerCluster(spec, **kw)
        started.append(cluster)
        return cluster.start()

    yield make
    for cluster in started:
        try:
            cluster.collect_logs(tmp_path / "logs" / cluster.spec.name)
        finally:
            cluster.stop()


def pytest_collection_modifyitems(items):
    # Everything under tests/integration talks to real containers.
    for item in items:
        if "/tests/integration/" in str(item.fspath):
            item.add_marker(pytest.mark.cluster)
