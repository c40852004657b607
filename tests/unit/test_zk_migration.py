"""ZooKeeper → KRaft migration without Docker: the node configs of each step
(clusters/migration.py), the fault's steps in order on a fake Migratable cluster,
and the scenario checks (exit 2 naming file, line and field; nothing started)."""
from __future__ import annotations

import json
import textwrap

import pytest

from clusters.api import BROKER, CONTROLLER, ZOOKEEPER, ExecResult, Migratable, PartitionState
from clusters.migration import MIGRATION_FLAG, kraft_spec_of, plan_migration
from clusters.spec import ClusterSpec
from core.errors import SpecError
from core.history import EventLog, read_table
from faults.base import FaultContext, FaultError
from faults.catalog import fault_needs, make_fault
from faults.migration import STEPS, ZkMigration
from faults.needs import ZOOKEEPER_MODE
from harness.cli import main
from harness.scenario import _display


def props(text: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in text.strip().splitlines())


def zk_spec(**config) -> ClusterSpec:
    return ClusterSpec.zookeeper("3.9", brokers=3).with_config({"min.insync.replicas": 2, **config})


# -- the configs of each step ------------------------------------------------------------
def test_controllers_start_in_migration_mode_beside_zookeeper():
    plan = plan_migration(zk_spec(), controllers=1)
    assert [(p.alias, p.role, p.node_id) for p in plan.controllers] == [("controller-1", CONTROLLER, 1001)]
    c = props(plan.controllers[0].config)
    assert c["process.roles"] == "controller" and c["node.id"] == "1001"
    assert c[MIGRATION_FLAG] == "true" and c["zookeeper.connect"] == "zk-1:2181"
    assert c["controller.quorum.voters"] == "1001@controller-1:9094"
    # The controller talks to the ZooKeeper brokers over their inter-broker listener.
    assert c["inter.broker.listener.name"] == "INTERNAL"
    assert "INTERNAL:PLAINTEXT" in c["listener.security.protocol.map"].split(",")


def test_brokers_enter_migration_keeping_their_zookeeper_config():
    plan = plan_migration(zk_spec(**{"num.io.threads": 2}), controllers=3)
    b = props(plan.brokers_migrating[1].config)
    assert plan.brokers_migrating[1].alias == "broker-2" and plan.brokers_migrating[1].role == BROKER
    assert b["broker.id"] == "2" and b["zookeeper.connect"] == "zk-1:2181"
    assert "process.roles" not in b and "node.id" not in b
    assert b[MIGRATION_FLAG] == "true" and b["inter.broker.protocol.version"] == "3.9"
    assert b["controller.quorum.voters"] == ("1001@controller-1:9094,1002@controller-2:9094,"
                                             "1003@controller-3:9094")
    assert b["controller.listener.names"] == "CONTROLLER"
    assert "CONTROLLER:PLAINTEXT" in b["listener.security.protocol.map"].split(",")
    assert b["num.io.threads"] == "2" and b["min.insync.replicas"] == "2"


def test_brokers_and_controllers_end_as_kraft_without_zookeeper():
    plan = plan_migration(zk_spec(), controllers=1)
    for p in plan.brokers_kraft:
        b = props(p.config)
        assert b["process.roles"] == "broker" and b["node.id"] == str(p.node_id)
        assert not {"zookeeper.connect", "broker.id", MIGRATION_FLAG,
                    "inter.broker.protocol.version"} & set(b)
        assert b["min.insync.replicas"] == "2"
    c = props(plan.controllers_kraft[0].config)
    assert c["process.roles"] == "controller"
    assert MIGRATION_FLAG not in c and "zookeeper.connect" not in c
    assert plan.kraft_spec.mode == "kraft-isolated" and plan.kraft_spec.controllers == 1
    assert plan.kraft_spec.broker_ids() == plan.zk_spec.broker_ids()


def test_only_a_zookeeper_cluster_can_be_migrated():
    with pytest.raises(SpecError, match="no ZooKeeper to migrate from"):
        kraft_spec_of(ClusterSpec.kraft_combined("3.9"), 1)
    with pytest.raises(SpecError, match="1 or 3"):
        plan_migration(zk_spec(), controllers=2)


# -- the fault kind ---------------------------------------------------------------------
def test_the_kind_needs_zookeeper_takes_no_target_and_typed_params():
    assert fault_needs("zk-migration") == {ZOOKEEPER_MODE}
    fault = make_fault("zk-migration", None, {"controllers": 3}, "faults.timeline[0]")
    assert isinstance(fault, ZkMigration) and fault.controllers == 3
    assert fault.heal_after_s == 0.0          # self-healing: a scenario's hold does not apply
    with pytest.raises(SpecError, match=r"faults.timeline\[0\].params.controllers"):
        make_fault("zk-migration", None, {"controllers": 2}, "faults.timeline[0]")
    with pytest.raises(SpecError, match=r"faults.timeline\[0\].target"):
        make_fault("zk-migration", "random_broker", None, "faults.timeline[0]")


class Node:
    def __init__(self, name: str, role: str, node_id: int, log: str = ""):
        self.name, self.role, self.node_id, self.log = name, role, node_id, log
        self.running = True

    def is_running(self) -> bool:
        return self.running

    def start(self) -> None:
        self.running = True

    def logs(self) -> str:
        return self.log

    def exec(self, cmd, user: str = "root") -> ExecResult:
        script = cmd[-1]
        if "meta.properties" in script:
            return ExecResult(0, "zk-cluster-id\n")
        if "MetadataQuorumCommand" in script:
            return ExecResult(0, "log4j:WARN noise\nClusterId: zk-cluster-id\nLeaderId: 1001\n")
        return ExecResult(1, f"unexpected {script}")


# What each new controller container logs, as 3.9.2 does.
CONTROLLER_LOG = {
    "migrating": "[2026-11-23 15:14:46,314] INFO [QuorumController id=1001] Becoming the active "
                 "controller at epoch 1\n"
                 "[2026-11-23 15:15:15,072] INFO [KRaftMigrationDriver id=1001] 1001 transitioning "
                 "from WAIT_FOR_BROKERS to BECOME_CONTROLLER state\n"
                 "[2026-11-23 15:15:15,446] INFO [KRaftMigrationDriver id=1001] Completed migration "
                 "of metadata from ZooKeeper to KRaft. 20 records were generated in 310 ms\n"
                 "[2026-11-23 15:15:15,653] INFO [KRaftMigrationDriver id=1001] 1001 transitioning "
                 "from KRAFT_CONTROLLER_TO_BROKER_COMM to DUAL_WRITE state\n",
    "kraft": "INFO Replayed a ZkMigrationStateRecord changing the migration state from "
             "MIGRATION to POST_MIGRATION.\n",
}


class MigratableCluster:
    """Records what the fault asked of it; every partition always fully in sync."""
    run_id = "fake"

    def __init__(self):
        self.spec = zk_spec()
        self._nodes = [Node("zk-1", ZOOKEEPER, 1)] + [Node(f"broker-{i}", BROKER, i) for i in (1, 2, 3)]
        self.calls: list[str] = []

    def nodes(self, role=None):
        roles = None if role is None else ({role} if isinstance(role, str) else set(role))
        return [n for n in self._nodes if roles is None or n.role in roles]

    def partitions(self, topic=None):
        return [PartitionState("t", 0, 1, (1, 2, 3), (1, 2, 3))]

    def active_controller(self):
        return self.nodes(CONTROLLER)[0]

    def migration_plan(self, controllers):
        return plan_migration(self.spec, controllers)

    def add_node(self, plan, cluster_id=None):
        self.calls.append(f"add {plan.alias} {cluster_id}")
        self._nodes.append(Node(plan.alias, plan.role, plan.node_id, CONTROLLER_LOG["migrating"]))
        return self._nodes[-1]

    def reconfigure_node(self, node, plan):
        mode = "migrating" if MIGRATION_FLAG in props(plan.config) else "kraft"
        self.calls.append(f"reconfigure {plan.alias} {mode}")
        new = Node(plan.alias, plan.role, plan.node_id, CONTROLLER_LOG[mode] if plan.role == CONTROLLER else "")
        self._nodes[self._nodes.index(node)] = new
        return new

    def retire_node(self, node):
        self.calls.append(f"retire {node.name}")
        node.running = False
        self._nodes.remove(node)

    def adopt_spec(self, spec, cluster_id=None):
        self.calls.append(f"adopt {spec.mode} {cluster_id}")
        self.spec = spec


def test_the_fault_runs_the_documented_steps_in_order_and_times_each(tmp_path):
    cluster = MigratableCluster()
    assert isinstance(cluster, Migratable)
    with EventLog(tmp_path, "fake") as events:
        ctx = FaultContext(cluster=cluster, events=events)
        fault = ZkMigration(1, migration_timeout_s=5, isr_timeout_s=5)
        fault.inject(ctx)
        fault.heal(ctx)
    assert cluster.calls == [
        "add controller-1 zk-cluster-id",
        "reconfigure broker-1 migrating", "reconfigure broker-2 migrating",
        "reconfigure broker-3 migrating",
        "reconfigure broker-1 kraft", "reconfigure broker-2 kraft", "reconfigure broker-3 kraft",
        "reconfigure controller-1 kraft",
        "retire zk-1", "adopt kraft-isolated zk-cluster-id"]
    assert [s["step"] for s in fault.detail["steps"]] == list(STEPS)
    assert all(s["outcome"] == "ok" and s["seconds"] >= 0 for s in fault.detail["steps"])
    assert list(fault.detail["steps"][1]["node_s"]) == ["broker-1", "broker-2", "broker-3"]
    assert fault.detail["quorum_status"].startswith("ClusterId: zk-cluster-id")
    assert "Completed migration" in fault.detail["migration_log"]
    assert fault.detail["steps"][2]["driver_s"] == 0.581     # from the controller's own timestamps
    assert "POST_MIGRATION" in fault.detail["steps"][4]["finalized_log"]
    assert fault.detail["steps"][5]["zookeeper_running"] == {"zk-1": False}
    rows = read_table(tmp_path, "events").to_pylist()
    steps = [r for r in rows if r["name"].startswith("zk-migration:")]
    assert [r["name"] for r in steps] == [f"zk-migration:{s}" for s in STEPS]
    assert all(r["kind"] == "phase" for r in steps)
    for r in steps:
        d = json.loads(r["detail"])
        assert d["end_us"] >= r["ts_us"] and d["fault_id"] == fault.fault_id
    assert [r["kind"] for r in rows if r["name"] == "zk-migration"] == ["fault", "heal"]


def test_a_failed_step_is_recorded_and_the_fault_stays_healable(tmp_path):
    cluster = MigratableCluster()
    cluster.add_node = lambda plan, cluster_id=None: (_ for _ in ()).throw(RuntimeError("no room"))
    ctx = FaultContext(cluster=cluster)
    fault = ZkMigration(1, migration_timeout_s=1, isr_timeout_s=1)
    with pytest.raises(RuntimeError, match="no room"):
        fault.inject(ctx)
    assert fault.detail["steps"][0]["outcome"] == "failed"
    fault.heal(ctx)
    assert fault.healed


def test_a_cluster_that_cannot_reshape_is_refused(tmp_path):
    class Plain:
        def nodes(self, role=None):
            return []
    ctx = FaultContext(cluster=Plain())
    fault = ZkMigration()
    with pytest.raises(FaultError, match="Migratable"):
        fault.inject(ctx)


# -- scenarios ---------------------------------------------------------------------------
SCENARIO = """\
cluster: {mode: kraft-combined, version: "3.9", brokers: 3}
topics:
  - {name: t, partitions: 3, replication_factor: 3, configs: {min.insync.replicas: 2}}
workload:
  duration_s: 60
  producers:
    - {name: p0, topic: t}
faults:
  timeline:
    - {at: 5, fault: zk-migration}
"""


@pytest.mark.parametrize("text,field,words", [
    (SCENARIO, "faults.timeline[0].fault", ["'zk-migration' needs a ZooKeeper-mode cluster"]),
    (SCENARIO.replace("kraft-combined", "zookeeper").replace("fault: zk-migration}",
                                                              "fault: zk-migration, params: {controllers: 2}}"),
     "faults.timeline[0].params.controllers", ["2 is not allowed", "1 or 3"]),
], ids=["on kraft", "two controllers"])
def test_a_bad_migration_scenario_exits_2_naming_file_line_and_field(tmp_path, capsys, text, field, words):
    path = tmp_path / "scenario.yaml"
    path.write_text(textwrap.dedent(text))
    code = main(["run", str(path), "--runs-dir", str(tmp_path / "runs")])
    err = capsys.readouterr().err
    assert code == 2, err
    assert f"{_display(path)}:10" in err and field in err, err
    for word in words:
        assert word in err, err
    assert not (tmp_path / "runs").exists()            # nothing started


def test_the_built_in_scenario_is_valid():
    assert main(["run", "zk-migration", "--dry-run"]) == 0


ZK = SCENARIO.replace("kraft-combined", "zookeeper")


def test_faults_after_a_migration_are_checked_against_the_kraft_cluster(tmp_path, capsys):
    after = ZK + "    - {at: 40, fault: rolling-upgrade, params: {to_version: '4'}}\n"
    (tmp_path / "ok.yaml").write_text(after)        # 4.x has no ZooKeeper: fine once migrated
    assert main(["run", str(tmp_path / "ok.yaml"), "--dry-run"]) == 0, capsys.readouterr().err
    before = ZK.replace("at: 5,", "at: 50,") + "    - {at: 40, fault: rolling-upgrade, params: {to_version: '4'}}\n"
    (tmp_path / "bad.yaml").write_text(before)
    assert main(["run", str(tmp_path / "bad.yaml"), "--dry-run"]) == 2
    assert "has no ZooKeeper mode" in capsys.readouterr().err
    expiry = ZK + "    - {at: 40, fault: zk-session-expiry}\n"   # ZooKeeper is retired by then
    (tmp_path / "expiry.yaml").write_text(expiry)
    assert main(["run", str(tmp_path / "expiry.yaml"), "--dry-run"]) == 2
    assert "needs a ZooKeeper-mode cluster; this one is kraft-isolated" in capsys.readouterr().err
