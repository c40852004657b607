"""The pytest plugin without a cluster: registered by its entry point, cheap to load
(every pytest run imports it), worker-unique names, how kafka_cluster's spec is made
from the marker and indirect params, and the documented example's selection."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from importlib.metadata import entry_points
from pathlib import Path

from harness.pytest_plugin import ClusterPool, worker_id, worker_run_id

REPO = Path(__file__).resolve().parents[2]


def _pytest(*args: str, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
                          capture_output=True, text=True, cwd=cwd, timeout=120,
                          env={**os.environ, **(env or {})})


def test_registered_as_pytest11_entry_point():
    eps = {ep.name: ep.value for ep in entry_points(group="pytest11")}
    assert eps.get("kafka_harness") == "harness.pytest_plugin"


def test_loading_the_plugin_imports_nothing_heavy():
    code = ("import sys, harness.pytest_plugin; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('docker', 'pyspark', 'confluent_kafka', 'clusters', 'pyarrow', 'pandas')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_worker_ids_in_run_ids(monkeypatch):
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw3")
    assert worker_id() == "gw3" and worker_run_id().endswith("-gw3")
    assert worker_run_id() != worker_run_id()
    monkeypatch.delenv("PYTEST_XDIST_WORKER")
    assert worker_id() == "main"


def test_pool_spec_defaults_and_refuses_unknown_fields():
    spec = ClusterPool(None).spec({"version": "4"})
    assert (spec.mode, spec.kafka.version, spec.brokers) == ("kraft-combined", "4.3.1", 1)
    # the pool keys clusters by spec: the defaults spelt out are the same cluster, another version is not
    pool = ClusterPool(None)
    assert {pool.spec({}), pool.spec({"version": "3.9", "brokers": 1}), pool.spec({"version": "4"})} == \
        {pool.spec({}), pool.spec({"version": "4"})}
    try:
        ClusterPool(None).spec({"brokerz": 3})
    except Exception as e:
        assert "brokerz" in str(e)
    else:
        raise AssertionError("an unknown cluster field was accepted")


INNER = textwrap.dedent('''
    import pytest
    from harness.pytest_plugin import _cluster_params

    @pytest.fixture
    def params(request):
        return _cluster_params(request)

    @pytest.mark.kafka_chaos(mode="zookeeper", brokers=1, fresh=True)
    @pytest.mark.parametrize("params", [{"version": "3.9", "brokers": 3}], indirect=True)
    def test_merged(params):
        assert params == ({"mode": "zookeeper", "brokers": 3, "version": "3.9"}, True)

    def test_scope_option(params, pytestconfig):
        assert params == ({}, pytestconfig.getoption("--kafka-cluster-scope") == "function")
''')


def test_marker_and_indirect_params_make_the_spec(tmp_path):
    (tmp_path / "test_inner.py").write_text(INNER)
    assert _pytest("-q", "test_inner.py", cwd=tmp_path).returncode == 0
    proc = _pytest("-q", "test_inner.py", "--kafka-cluster-scope", "function", "--strict-markers", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout


def test_example_file_is_selected_by_the_marker():
    example = str(REPO / "docs" / "pytest" / "test_example.py")
    chosen = _pytest("--collect-only", "-q", "-m", "kafka_chaos", example, cwd=REPO)
    assert chosen.returncode == 0, chosen.stdout + chosen.stderr
    assert "4 tests collected" in chosen.stdout or "4 selected" in chosen.stdout, chosen.stdout
    rest = _pytest("--collect-only", "-q", "-m", "not kafka_chaos", example, cwd=REPO)
    assert "4 deselected" in rest.stdout, rest.stdout
