"""`harness upgrade-check`: the scenario it builds, and the bad input it refuses (exit 2)."""
import subprocess
import sys

import pytest

from core.errors import SpecError
from harness.batch.upgrade_check import LOAD_PER_NODE_S, upgrade_scenario

HARNESS = [sys.executable, "-m", "harness.cli"]


def test_the_default_scenario_starts_on_from_and_upgrades_to_to():
    s = upgrade_scenario(None, "3.9", "4")
    assert s.cluster.version == "3.9.2"
    [upgrade] = s.faults.timeline
    assert upgrade.fault == "rolling-upgrade" and upgrade.params["to_version"] == "4.3.1"
    assert s.workload.duration_s >= upgrade.at + LOAD_PER_NODE_S * 3
    assert s.description.startswith("upgrade check 3.9.2 -> 4.3.1")


def test_the_users_topology_and_configs_are_kept_and_its_faults_replaced():
    s = upgrade_scenario("leader-isolation", "3.9", "4", ("cluster.mode=kraft-isolated",
                                                           "cluster.controllers=3", "cluster.brokers=4"))
    assert (s.cluster.mode, s.cluster.controllers, s.cluster.brokers) == ("kraft-isolated", 3, 4)
    assert [f.fault for f in s.faults.timeline] == ["rolling-upgrade"]
    assert s.workload.producers[0].acks == "1"          # the scenario's own client config
    assert s.workload.duration_s >= LOAD_PER_NODE_S * 7  # 4 brokers and 3 controllers to upgrade


@pytest.mark.parametrize("args, where, said", [
    (("--from", "2.8", "--to", "4"), "--from", "unknown Kafka version '2.8'"),
    (("--from", "3.9", "--to", "3.9"), "--to", "is the same version"),
    (("--from", "4", "--to", "3.9"), "--to", "is a downgrade"),
    (("--from", "3.9", "--to", "4", "--scenario", "zookeeper-nemesis"),
     "harness/scenarios/zookeeper-nemesis.yaml:5 cluster.mode", "harness run zk-migration"),
    (("--from", "3.9", "--to", "4", "--set", "cluster.mode=zookeeper"),
     "--set cluster.mode=zookeeper: cluster.mode", "no ZooKeeper mode"),
    (("--from", "3.9", "--to", "4", "--set", "cluster.brokerz=4"), "--set cluster.brokerz",
     "did you mean 'brokers'"),
])
def test_bad_input_names_the_flag_or_field_and_exits_2(args, where, said, tmp_path):
    proc = subprocess.run([*HARNESS, "upgrade-check", *args, "--runs-dir", str(tmp_path / "runs")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert where in proc.stderr and said in proc.stderr, proc.stderr
    assert not (tmp_path / "runs").exists()


def test_a_direct_call_raises_a_spec_error():
    with pytest.raises(SpecError, match="--from"):
        upgrade_scenario(None, "1.0", "4")
