"""The upgrade paths Kafka documents: the step plan of each supported pair, and every
refused pair with its reason (upgrade-check exits 2 before anything starts)."""
import subprocess
import sys

import pytest

from clusters.upgrade_paths import (
    FEATURES,
    PIN_PROTOCOL,
    REPLACE,
    RESTART,
    UpgradeRefused,
    check_pair,
    plan_upgrade,
)
from clusters.versions import resolve_version as v

COMBINED3 = [("kafka-1", "combined"), ("kafka-2", "combined"), ("kafka-3", "combined")]
ISOLATED = [("controller-1", "controller"), ("broker-1", "broker"), ("broker-2", "broker")]
ZK = [("zk-1", "zookeeper"), ("kafka-1", "broker"), ("kafka-2", "broker")]
HARNESS = [sys.executable, "-m", "harness.cli"]


def actions(plan):
    return [(s.action, s.node, s.value) for s in plan.steps]


def test_a_patch_upgrade_replaces_the_binaries_and_raises_nothing():
    plan = plan_upgrade(v("4.1.1"), v("4.1.2"), "kraft-combined", COMBINED3)
    assert actions(plan) == [(REPLACE, f"kafka-{i}", "4.1.2") for i in (1, 2, 3)]
    assert "patch" in plan.kind


def test_a_minor_4x_upgrade_goes_controllers_brokers_then_release_version():
    plan = plan_upgrade(v("4.1"), v("4.3"), "kraft-isolated", ISOLATED)
    assert actions(plan) == [(REPLACE, "controller-1", "4.3.1"), (REPLACE, "broker-1", "4.3.1"),
                             (REPLACE, "broker-2", "4.3.1"), (FEATURES, None, "4.3")]
    assert "--release-version 4.3" in plan.steps[-1].text
    assert "Upgrading Servers to 4.3" in plan.doc


@pytest.mark.parametrize("old", ["3.6", "3.7", "3.8"])
def test_3x_kraft_to_3_9_raises_the_metadata_version_with_the_metadata_flag(old):
    plan = plan_upgrade(v(old), v("3.9"), "kraft-combined", COMBINED3)
    assert [a for a, _, _ in actions(plan)] == [REPLACE] * 3 + [FEATURES]
    assert plan.steps[-1].text == "kafka-features.sh upgrade --metadata 3.9"   # 3.9's own notes
    assert "Upgrading KRaft-based clusters" in plan.doc


def test_zookeeper_3x_to_3_9_pins_the_protocol_upgrades_then_bumps_and_restarts():
    plan = plan_upgrade(v("3.8.1"), v("3.9"), "zookeeper", ZK)
    assert actions(plan) == [
        (PIN_PROTOCOL, None, "3.8"), (REPLACE, "kafka-1", "3.9.2"), (REPLACE, "kafka-2", "3.9.2"),
        (PIN_PROTOCOL, None, "3.9"), (RESTART, "kafka-1", "3.9"), (RESTART, "kafka-2", "3.9")]
    assert "zk-1" not in {s.node for s in plan.steps}          # ZooKeeper itself is not Kafka
    assert "ZooKeeper-based" in plan.doc


def test_3_9_to_4x_is_supported_in_both_kraft_modes():
    for mode, nodes in (("kraft-combined", COMBINED3), ("kraft-isolated", ISOLATED)):
        plan = plan_upgrade(v("3.9"), v("4.0"), mode, nodes)
        assert plan.steps[-1].action == FEATURES and plan.steps[-1].value == "4.0"


def test_a_rollback_stops_before_the_metadata_version_and_goes_back_in_reverse():
    plan = plan_upgrade(v("4.1"), v("4.3"), "kraft-isolated", ISOLATED, rollback=True)
    assert actions(plan) == [(REPLACE, "controller-1", "4.3.1"), (REPLACE, "broker-1", "4.3.1"),
                             (REPLACE, "broker-2", "4.3.1"), (REPLACE, "broker-2", "4.1.2"),
                             (REPLACE, "broker-1", "4.1.2"), (REPLACE, "controller-1", "4.1.2")]
    zk = plan_upgrade(v("3.8"), v("3.9"), "zookeeper", ZK, rollback=True)
    assert [a for a, _, _ in actions(zk)] == [PIN_PROTOCOL] + [REPLACE] * 4   # protocol never bumped
    assert "and back" in plan.lines()[0]


@pytest.mark.parametrize("old, new, mode, rollback, field, said", [
    ("4.3", "4.1", "kraft-combined", False, "--to", "is a downgrade"),
    ("4.1.2", "4.1.1", "kraft-combined", False, "--to", "is a downgrade"),
    ("3.9", "3.9", "kraft-combined", False, "--to", "is the same version"),
    ("3.9", "4.0", "zookeeper", False, "--to", "no ZooKeeper mode"),
    ("3.8", "4.3", "zookeeper", False, "--to", "no ZooKeeper mode"),
    ("3.9", "4.1", "kraft-combined", True, "--rollback", "no rollback from 4.1 binaries to 3.9"),
])
def test_every_refused_pair_says_why(old, new, mode, rollback, field, said):
    with pytest.raises(UpgradeRefused) as e:
        check_pair(v(old), v(new), mode, rollback)
    assert e.value.field == field and said in e.value.problem


def test_zookeeper_to_4x_is_sent_to_the_migration():
    with pytest.raises(UpgradeRefused) as e:
        check_pair(v("3.9"), v("4.3"), "zookeeper")
    assert "migrate first: `harness run zk-migration`" in e.value.fix


def test_a_kraft_cluster_older_than_3_3_may_not_skip_to_4x():
    import dataclasses
    old = dataclasses.replace(v("3.6"), version="3.2.3",
                              release=dataclasses.replace(v("3.6").release, line="3.2"))
    with pytest.raises(UpgradeRefused, match="3.3 or later") as e:
        check_pair(old, v("4.0"), "kraft-combined")
    assert "upgrade to 3.9 first" in e.value.fix


@pytest.mark.parametrize("args, said", [
    (("--from", "4.3", "--to", "4.1"), "is a downgrade"),
    (("--from", "3.9", "--to", "4.1", "--rollback"), "no rollback"),
    (("--from", "3.8", "--to", "4.1", "--set", "cluster.mode=zookeeper"), "zk-migration"),
    (("--from", "4.1.9", "--to", "4.3"), "4.1 (4.1.0, 4.1.1, 4.1.2)"),
])
def test_upgrade_check_refuses_with_exit_2_and_starts_nothing(args, said, tmp_path):
    proc = subprocess.run([*HARNESS, "upgrade-check", *args, "--runs-dir", str(tmp_path / "runs")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and said in proc.stderr, proc.stderr
    assert not (tmp_path / "runs").exists()


def test_upgrade_check_dry_run_prints_the_plan_first(tmp_path):
    proc = subprocess.run([*HARNESS, "upgrade-check", "--from", "4.1", "--to", "4.3", "--dry-run",
                           "--runs-dir", str(tmp_path / "runs")], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    first = proc.stdout.splitlines()[:5]
    assert first[0].startswith("plan: KRaft minor upgrade 4.1 -> 4.3, 4.1.2 -> 4.3.1")
    assert first[1] == "  1. kafka-1: stop, start on 4.3.1, wait for a full ISR"
    assert "--release-version 4.3" in proc.stdout
