"""pytest plugin of kafka-harness (entry point `pytest11`, loaded once the package is installed).

Fixtures
  kafka_cluster   a real DockerCluster, started and healthy. Configure it with
                  indirect params or the marker (both take ClusterSpec.from_dict keys:
                  mode, version, brokers, controllers, zookeepers, config, …):
                      @pytest.mark.parametrize("kafka_cluster", [{"mode": "kraft-combined", "version": "4"}],
                                               indirect=True)
                      @pytest.mark.kafka_chaos(mode="zookeeper", version="3.9", brokers=1)
                  Session scope by default: one cluster per distinct spec per worker, started
                  on first use and stopped when the session ends. `kafka_chaos(fresh=True)`
                  (or --kafka-cluster-scope=function) gives a test its own cluster, stopped
                  after it: use it when the test damages the cluster (kills a broker …).
  chaos_run       a function: chaos_run("quick" | "my.yaml", "producer.acks=1", …, seed=N)
                  runs the scenario end to end (its own cluster) and returns the RunResult:
                  .status ("passed" | "failed" | "unknown"), .exit_code, .summary, .run_dir.
Marker
  kafka_chaos     marks a real-cluster test; every test that uses either fixture gets it,
                  so `pytest -m "not kafka_chaos"` runs the rest without Docker.

pytest-xdist: every worker starts its own clusters; their run ids (hence container,
network and mount names) end with the worker id (gw0, gw1, …; "main" without xdist),
so two workers never share or remove each other's resources.

The plugin is imported by every pytest run of every project with the package
installed, so this module imports only pytest at load time; Docker, Kafka and Spark
are imported when a fixture is first used.
"""
from __future__ import annotations

import os
from typing import Any

import pytest

MARKER = "kafka_chaos"
FIXTURES = ("kafka_cluster", "chaos_run")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("kafka-harness")
    group.addoption("--kafka-cluster-scope", choices=("session", "function"), default="session",
                    help="lifetime of kafka_cluster clusters (default: session)")
    group.addoption("--kafka-runs-dir", default=None,
                    help="where chaos_run keeps run dirs (default: pytest's tmp dir)")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", f"{MARKER}(**cluster): a real Kafka cluster test (kafka-harness); keyword "
                   "arguments configure kafka_cluster (mode, version, brokers, …, fresh=True)")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if any(f in getattr(item, "fixturenames", ()) for f in FIXTURES):
            item.add_marker(MARKER)


def worker_id(config: pytest.Config | None = None) -> str:
    """gw0, gw1, … under pytest-xdist; "main" otherwise."""
    workerinput = getattr(config, "workerinput", None) if config is not None else None
    if workerinput:
        return str(workerinput["workerid"])
    return os.environ.get("PYTEST_XDIST_WORKER") or "main"


def worker_run_id(config: pytest.Config | None = None) -> str:
    from clusters.labels import new_run_id
    return f"{new_run_id()}-{worker_id(config)}"


class ClusterPool:
    """This worker's clusters, one per distinct spec, stopped together at session end."""

    def __init__(self, config: pytest.Config):
        self.config = config
        self.clusters: dict[Any, Any] = {}

    def spec(self, params: dict[str, Any]):
        from clusters.spec import ClusterSpec
        data = {"mode": "kraft-combined", "version": "3.9", "brokers": 1, **params}
        return ClusterSpec.from_dict(data)

    def start(self, spec):
        from clusters.docker_cluster import DockerCluster
        return DockerCluster(spec, run_id=worker_run_id(self.config)).start()

    def shared(self, spec):
        cluster = self.clusters.get(spec)
        if cluster is None:
            cluster = self.clusters[spec] = self.start(spec)
        else:
            cluster.wait_healthy(120)         # a previous test may have faulted it
        return cluster

    def stop_all(self) -> None:
        errors = []
        for cluster in self.clusters.values():
            try:
                cluster.stop()
            except Exception as e:              # every cluster is stopped, whatever one does
                errors.append(e)
        self.clusters.clear()
        if errors:
            raise errors[0]


@pytest.fixture(scope="session")
def kafka_cluster_pool(request: pytest.FixtureRequest):
    pool = ClusterPool(request.config)
    yield pool
    pool.stop_all()


def _cluster_params(request: pytest.FixtureRequest) -> tuple[dict[str, Any], bool]:
    params: dict[str, Any] = {}
    marker = request.node.get_closest_marker(MARKER)
    if marker is not None:
        params.update(marker.kwargs)
    if hasattr(request, "param"):
        if not isinstance(request.param, dict):
            raise pytest.UsageError("kafka_cluster params are dicts, e.g. {'mode': 'kraft-combined'}")
        params.update(request.param)
    fresh = bool(params.pop("fresh", False)) or \
        request.config.getoption("--kafka-cluster-scope") == "function"
    return params, fresh


@pytest.fixture
def kafka_cluster(request: pytest.FixtureRequest, kafka_cluster_pool: ClusterPool):
    """A started, healthy clusters.docker_cluster.DockerCluster (see the module doc)."""
    params, fresh = _cluster_params(request)
    spec = kafka_cluster_pool.spec(params)
    if not fresh:
        yield kafka_cluster_pool.shared(spec)
        return
    cluster = kafka_cluster_pool.start(spec)
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="session")
def _chaos_spark(request: pytest.FixtureRequest):
    """One Spark session per worker for every chaos_run's verification (as a suite does),
    started by the first chaos_run and stopped with the session."""
    from contextlib import ExitStack
    with ExitStack() as stack:
        yield {"stack": stack}


@pytest.fixture
def chaos_run(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory,
              _chaos_spark: dict):
    """chaos_run(scenario, *overrides, seed=None) -> harness.run.runner.RunResult."""
    from pathlib import Path

    def run(scenario: str | None = None, *overrides: str, seed: int | None = None):
        from harness.cli.run import preflight
        from harness.run.runner import RunOptions, run_scenario
        from harness.scenario import load_scenario
        from spark_reports.session import session_scope
        loaded = load_scenario(scenario, tuple(overrides), seed)
        preflight()
        if "session" not in _chaos_spark:
            _chaos_spark["session"] = _chaos_spark["stack"].enter_context(session_scope(None))
        option = request.config.getoption("--kafka-runs-dir")
        runs_dir = Path(option) if option else tmp_path_factory.mktemp(f"chaos-runs-{worker_id(request.config)}")
        return run_scenario(loaded, RunOptions(runs_dir=runs_dir, progress="none",
                                               run_id=worker_run_id(request.config),
                                               spark=_chaos_spark["session"]))
    return run
