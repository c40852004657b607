"""Dynamic quorum (KIP-853): the configs and format options a dynamic quorum's nodes get,
the quorum tool's output read, and the faults refused where there is no dynamic quorum."""
import pytest

from clusters.config import directory_id, format_args, plan_nodes
from clusters.spec import ClusterSpec
from core.errors import SpecError
from faults.catalog import fault_needs
from faults.needs import DYNAMIC_QUORUM
from faults.quorum import quorum_command, voter_ids
from harness.scenario import load_scenario


def dynamic(version="4.1", controllers=3):
    return ClusterSpec.from_dict({"mode": "kraft-isolated", "version": version,
                                  "controllers": controllers, "dynamic_quorum": True})


def test_nodes_find_a_dynamic_quorum_through_bootstrap_servers():
    plans = {p.alias: p.config for p in plan_nodes(dynamic())}
    for cfg in (plans["controller-1"], plans["broker-1"]):
        assert "controller.quorum.bootstrap.servers=controller-1:9094,controller-2:9094,controller-3:9094" in cfg
        assert "controller.quorum.voters" not in cfg
    static = {p.alias: p.config for p in plan_nodes(ClusterSpec.kraft_isolated("4.1", 3, 3))}
    assert "controller.quorum.voters=1001@controller-1:9094" in static["controller-1"]


def test_controllers_are_formatted_with_every_initial_controller_and_its_directory_id():
    spec = dynamic()
    args = format_args(spec, "controller", "CID")
    assert args.startswith("--initial-controllers 1001@controller-1:9094:")
    assert args.count("@controller-") == 3 and directory_id("CID", 1002) in args
    assert format_args(spec, "broker", "CID") == ""          # brokers only find the quorum
    assert len(directory_id("CID", 1001)) == 22 and directory_id("CID", 1001) != directory_id("CID", 1002)
    assert directory_id("CID", 1001) == directory_id("CID", 1001)     # the same on every node


def test_a_dynamic_quorum_needs_kraft_on_3_9_or_later():
    assert dynamic("3.9").dynamic_quorum
    with pytest.raises(SpecError, match="3.9") as e:
        dynamic("3.8")
    assert e.value.field == "dynamic_quorum"
    with pytest.raises(SpecError, match="KRaft"):
        ClusterSpec.from_dict({"mode": "zookeeper", "version": "3.9", "dynamic_quorum": True})


def test_the_quorum_tools_voters_are_read_in_both_formats():
    status = ('ClusterId: x\nLeaderId: 1001\nCurrentVoters: [{"id": 1001, "directoryId": "a", '
              '"endpoints": ["CONTROLLER://controller-1:9094"]}, {"id": 1004, "directoryId": "b"}]\n'
              'CurrentObservers: [{"id": 1, "directoryId": "c"}]')
    assert voter_ids(status) == [1001, 1004]
    assert voter_ids("CurrentVoters: [1001,1002,1003]\nCurrentObservers: [1,2]") == [1001, 1002, 1003]
    assert "--bootstrap-controller localhost:9094 describe --status" in quorum_command(
        "java", "localhost:9094", "describe --status")


def test_quorum_faults_are_refused_without_a_dynamic_quorum():
    assert fault_needs("controller-add") == {DYNAMIC_QUORUM}
    assert load_scenario("quorum-reconfig").cluster.dynamic_quorum
    with pytest.raises(SpecError, match="dynamic_quorum: true") as e:
        load_scenario("quorum-reconfig", ("cluster.dynamic_quorum=false",))
    assert "faults.timeline[0].fault" in e.value.field
    with pytest.raises(SpecError, match="'follower'"):
        load_scenario("quorum-reconfig", ("faults={timeline: [{at: 5, fault: controller-remove, "
                                          "params: {which: any}}]}",))
