"""One 3-broker KRaft cluster shared by every workload test (cluster start is the
expensive part on a 2-core machine); each test uses its own topics and run dir."""
from __future__ import annotations

import itertools
import uuid

import pytest

from clusters.docker_cluster import DockerCluster
from clusters.spec import ClusterSpec
from core.context import RunContext
from core.history import EventLog

_topics = itertools.count()


@pytest.fixture(scope="session")
def wl_cluster():
    spec = ClusterSpec.kraft_combined("3.9").with_config({"min.insync.replicas": "2"})
    with DockerCluster(spec) as cluster:
        yield cluster


class WorkloadRun(RunContext):
    """The shared cluster's run context, with a helper to make a fresh topic."""

    def topic(self, partitions: int = 6, **configs: str) -> str:
        name = f"wl-{next(_topics)}-{uuid.uuid4().hex[:6]}"
        self.cluster.create_topic(name, partitions, 3, {"min.insync.replicas": "2", **configs})
        return name


@pytest.fixture
def run(wl_cluster, tmp_path):
    """A run directory with an event log, on the shared cluster."""
    run_dir = tmp_path / "run"
    r = WorkloadRun(wl_cluster.run_id, run_dir,
                EventLog(str(run_dir), wl_cluster.run_id, writer_name="test-events"), wl_cluster)
    yield r
    r.events.close()


@pytest.fixture(scope="session")
def spark():
    """One Spark session for the tests that run the real reconciler: on the warm local
    Spark Connect server (spark_reports/session.py; --spark-mode's default)."""
    from spark_reports.session import session_scope
    with session_scope(None, about="workload integration tests") as session:
        session.conf.set("spark.sql.shuffle.partitions", "4")
        yield session
