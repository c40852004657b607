"""The fault catalog: every kind by name, typed params, targets, presets, errors."""
import random

import pytest
from test_fault_fakes import FakeCluster

from clusters.api import PartitionState
from core.errors import SpecError
from faults import catalog as cat
from faults.base import BaseFault, FaultContext
from faults.catalog import (
    KINDS,
    PRESETS,
    fault_factory,
    fault_needs,
    make_fault,
    needs_of_preset,
    preset,
    validate_fault,
)
from faults.needs import (
    NEEDS,
    PROTOCOL_PROXY,
    REPLACEABLE,
    TOXIPROXY,
    TOXIPROXY_REPLICATION,
    ZOOKEEPER_MODE,
)
from faults.selectors import selector_refs

LEADER = {"leader_of": {"topic": "t", "partition": 2}}

# kind -> (target, params, the built fault's name): a valid use of every kind.
VALID = {
    "kill": (LEADER, None, "kill"),
    "terminate": ("random_broker", {"stop_timeout_s": 5}, "terminate"),
    "bounce": (LEADER, {"times": 1, "interval_s": 0}, "bounce-clean"),
    "bounce-hard": (LEADER, {"times": 3}, "bounce-hard"),
    "pause": ({"node": "kafka-1"}, {}, "pause"),
    "sigstop": ({"node": 2}, None, "pause"),
    "partition": ({"minority": {"pool": "all_brokers"}}, {"shape": "isolate"}, "partition"),
    "disk-full": (LEADER, {"log_dir": "/data"}, "disk-full"),
    "log-dir-unwritable": (LEADER, {"stop_timeout_s": 10}, "log-dir-unwritable"),
    "toxic": (None, {"type": "latency", "latency_ms": 200}, "toxic-latency"),
    "protocol": (None, {"api": "Produce", "action": "drop_response"}, "protocol"),
    "controller-failover": (None, {"method": "pause"}, "controller-pause"),
    "zk-session-expiry": ({"followers_of": {"topic": "t"}}, {"method": "partition"},
                          "zk-session-expiry"),
    "rolling-restart": (None, {"signal": "hard"}, "rolling-restart-hard"),
    "rolling-upgrade": (None, {"to_version": 4}, "rolling-upgrade"),
    "zk-migration": (None, {"controllers": 3}, "zk-migration"),
    "controller-add": (None, {"timeout_s": 60}, "controller-add"),
    "controller-remove": (None, {"which": "leader"}, "controller-remove"),
    "exec": (LEADER, {"inject": "echo {node}", "heal": "echo {id}"}, "exec"),
    "mm2-kill": (None, None, "mm2-kill"),
    "mm2-pause": (None, {}, "mm2-pause"),
    "link-partition": (None, {"side": "target"}, "link-partition"),
    "link-latency": (None, {"latency_ms": 200, "jitter_ms": 20}, "link-latency"),
}


def test_the_table_covers_every_kind():
    assert set(VALID) == set(KINDS)


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_every_kind_builds_a_fresh_fault(kind):
    target, params, name = VALID[kind]
    a = make_fault(kind, target, params, where="faults[0]")
    b = make_fault(kind, target, params, where="faults[0]")
    assert isinstance(a, BaseFault) and a is not b
    assert a.name == name and a.fault_id is None
    # A self-healing fault ends its own inject healed; the others wait for heal().
    assert (a.heal_after_s == 0.0) is KINDS[kind].self_healing
    assert validate_fault(kind, target, params, where="faults[0]") is None


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_kind_metadata_is_consistent(kind):
    fk = KINDS[kind]
    assert fk.name == kind and fk.summary and "\n" not in fk.summary
    assert fk.target in (cat.REQUIRED, cat.OPTIONAL, cat.NONE)
    assert fk.needs <= NEEDS
    assert fk.params.model_config["frozen"] and fk.params.model_config["extra"] == "forbid"
    if fk.target != cat.OPTIONAL:
        assert fk.default_target is None
    # Every field name is snake_case.
    assert all(f == f.lower() and "-" not in f for f in fk.params.model_fields)


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_an_unknown_param_is_named_for_every_kind(kind):
    target, params, _ = VALID[kind]
    with pytest.raises(SpecError) as e:
        make_fault(kind, target, {**(params or {}), "bogus_knob": 1}, where="faults[4]")
    assert e.value.field == "faults[4].params.bogus_knob"
    assert "bogus_knob" in str(e.value)


# (kind, target, params, field named, text in the message)
ERRORS = [
    ("kil", LEADER, None, "f.fault", "did you mean 'kill'"),
    (None, LEADER, None, "f.fault", "use one of kill, terminate"),
    ("kill", None, None, "f.target", "kill needs a target"),
    ("disk-full", None, None, "f.target", "needs a target"),
    ("kill", "leadr_of", None, "f.target", "unknown selector 'leadr_of'"),
    ("kill", {"leader_of": {"topic": "t", "partition": "x"}}, None,
     "f.target.leader_of.partition", "integer"),
    ("controller-failover", "random_broker", None, "f.target", "takes no target"),
    ("rolling-upgrade", "all_brokers", {"to_version": "4"}, "f.target", "takes no target"),
    ("rolling-upgrade", None, None, "f.params.to_version", "is required"),
    ("zk-migration", "all_brokers", None, "f.target", "takes no target"),
    ("zk-migration", None, {"controllers": 2}, "f.params.controllers", "1 or 3"),
    ("rolling-upgrade", None, {"to_version": "9.9"}, "f.params.to_version",
     "unknown Kafka version '9.9'"),
    ("partition", None, None, "f.target", "shape 'isolate' needs a target"),
    ("partition", None, {"shape": "donut"}, "f.params.shape", "'ring'"),
    ("toxic", None, None, "f.params.type", "is required"),
    ("toxic", None, {"type": "latncy"}, "f.params.type", "'latency'"),
    ("toxic", None, {"type": "latency", "rate_kb_s": 5}, "f.params.rate_kb_s",
     "latency_ms, jitter_ms"),
    ("toxic", None, {"type": "bandwidth", "listeners": ["client", "repl"]},
     "f.params.listeners[1]", "'replication'"),
    ("toxic", None, {"type": "timeout", "streams": []}, "f.params.streams", "at least 1"),
    ("toxic", None, {"type": "slicer", "toxicity": 1.5}, "f.params.toxicity", "1.5"),
    ("toxic", None, {"type": "latency", "latency_ms": -1}, "f.params.latency_ms", "-1"),
    ("protocol", None, {"api": "Prodce", "action": "delay"}, "f.params.api",
     "did you mean 'Produce'?"),
    ("protocol", None, {"api": ["Produce", "ListOffsets"], "action": "error"}, "f.params.api",
     "cannot answer ListOffsets with an error"),
    ("protocol", None, {"api": "Produce", "action": "delay", "probability": 1.5},
     "f.params.probability", "1.5"),
    ("protocol", None, {"api": "Produce", "action": "delay", "probability": -0.1},
     "f.params.probability", "-0.1"),
    ("protocol", None, {"api": "Produce", "action": "error", "error": "NOT_LEADER"},
     "f.params.error", "did you mean 'NOT_LEADER_OR_FOLLOWER'?"),
    ("protocol", None, {"api": "Produce", "action": "drop"}, "f.params.action",
     "'drop_response'"),
    ("protocol", None, {"api": [], "action": "delay"}, "f.params.api", "at least 1"),
    ("controller-failover", None, {"method": "explode"}, "f.params.method", "'isolate'"),
    ("zk-session-expiry", None, {"method": "kill"}, "f.params.method", "'partition'"),
    ("zk-session-expiry", None, {"session_timeout_ms": 0}, "f.params.session_timeout_ms",
     "greater than 0"),
    ("rolling-restart", None, {"signal": "SIGKILL"}, "f.params.signal", "'clean' or 'hard'"),
    ("bounce", LEADER, {"times": 0}, "f.params.times", "greater than or equal to 1"),
    ("kill", LEADER, {"signal": "hard"}, "f.params.signal", "kill takes no params"),
    ("kill", LEADER, ["not", "a", "mapping"], "f.params", "must be a mapping"),
    ("terminate", LEADER, {"stop_timeout_s": "soon"}, "f.params.stop_timeout_s", "'soon'"),
]


@pytest.mark.parametrize("kind,target,params,field,text", ERRORS,
                         ids=[f"{e[0]}-{e[3]}" for e in ERRORS])
def test_bad_input_names_the_field(kind, target, params, field, text):
    with pytest.raises(SpecError) as made:
        make_fault(kind, target, params, where="f")
    with pytest.raises(SpecError) as validated:
        validate_fault(kind, target, params, where="f")
    assert made.value.field == validated.value.field == field
    assert str(made.value) == str(validated.value)
    assert str(made.value).startswith(f"{field}: ") and text in str(made.value)


def test_optional_targets_default_to_their_selector():
    assert KINDS["toxic"].default_target == "all_brokers"
    assert KINDS["zk-session-expiry"].default_target == "random_broker"
    assert make_fault("zk-session-expiry", None, None, "f").selector.__name__ == "random_broker"
    assert make_fault("rolling-restart", None, None, "f").selector.__name__ == "all_brokers"


def test_needs_follow_the_params():
    assert fault_needs("toxic", {"type": "latency"}) == {TOXIPROXY}
    assert fault_needs("toxic", {"type": "latency", "listeners": ["client", "replication"]}) == {
        TOXIPROXY, TOXIPROXY_REPLICATION}
    assert fault_needs("zk-session-expiry") == {ZOOKEEPER_MODE}
    assert fault_needs("rolling-upgrade", {"to_version": "4"}) == {REPLACEABLE}
    assert fault_needs("kill") == frozenset()
    assert fault_needs("protocol", {"api": "EndTxn", "action": "error"}) == {PROTOCOL_PROXY}


# -- faults built from data do what they say, on any partition ---------------------------
@pytest.fixture
def ctx(tmp_path):
    cluster = FakeCluster(tmp_path, brokers=3)
    cluster.partition_states = [PartitionState("t", 0, 1, (1, 2, 3), (1, 2, 3)),
                                PartitionState("t", 2, 3, (3, 1, 2), (3, 1, 2))]
    return FaultContext(cluster=cluster, rng=random.Random(0), client_ips=("10.9.9.9",))


def test_kill_aims_at_the_named_partition(ctx):
    f = make_fault("kill", LEADER, None, "f")
    f.inject(ctx)
    assert [n.name for n in f.targets] == ["kafka-3"]          # leader of t-2, not of t-0
    assert not ctx.cluster.node(3).is_running()
    f.heal(ctx)
    assert ctx.cluster.node(3).is_running()


def test_self_healing_kind_is_healed_when_inject_returns(ctx):
    f = make_fault("bounce-hard", LEADER, {"times": 1, "interval_s": 0}, "f")
    f.inject(ctx)
    assert f.healed and not ctx.active
    assert ctx.cluster.node(3).calls == ["kill SIGKILL", "start"]


@pytest.mark.parametrize("shape,target,cut", [
    ("isolate", LEADER, {"kafka-1", "kafka-2", "kafka-3"}),
    ("halves", "all_brokers", {"kafka-1", "kafka-2", "kafka-3"}),
    ("cut-clients", {"node": 2}, {"kafka-2"}),
])
def test_partition_shapes_from_data(ctx, shape, target, cut):
    f = make_fault("partition", target, {"shape": shape}, "f")
    f.inject(ctx)
    assert set(f.grudge) == cut
    if shape == "isolate":
        assert f.grudge["kafka-3"] == ("172.30.0.11", "172.30.0.12")
    if shape == "cut-clients":
        assert ctx.cluster.node(2).rules() == ["-s 10.9.9.9 -j DROP"]
    f.heal(ctx)
    assert all(n.rules() == [] for n in ctx.cluster.nodes())


def test_cut_clients_defaults_to_brokers_only(tmp_path):
    cluster = FakeCluster(tmp_path, brokers=2, controllers=1)
    ctx = FaultContext(cluster=cluster, client_ips=("10.9.9.9",))
    f = make_fault("partition", None, {"shape": "cut-clients"}, "f")
    f.inject(ctx)
    assert set(f.grudge) == {"kafka-1", "kafka-2"}       # controllers keep their clients
    f.heal(ctx)


class FakeToxiproxy:
    def __init__(self, proxies):
        self.names, self.toxics = proxies, {}

    def proxies(self):
        return list(self.names)

    def set_toxic(self, proxy, name, type_, attributes, stream, toxicity):
        self.toxics[(proxy, name)] = (type_, attributes, stream, toxicity)

    def remove_toxic(self, proxy, name):
        self.toxics.pop((proxy, name), None)


def test_toxic_from_data_sets_its_attributes_on_the_chosen_listeners(ctx):
    ctx.toxiproxy = FakeToxiproxy([f"broker-{i}-{lst}" for i in (1, 2, 3)
                                   for lst in ("client", "internal")])
    f = make_fault("toxic", LEADER, {"type": "latency", "latency_ms": 250,
                                     "listeners": ["replication"], "streams": ["upstream"],
                                     "toxicity": 0.5}, "f")
    f.inject(ctx)
    [(proxy, _)] = ctx.toxiproxy.toxics
    assert proxy == "broker-3-internal"
    assert list(ctx.toxiproxy.toxics.values()) == [
        ("latency", {"latency": 250, "jitter": 0}, "upstream", 0.5)]
    f.heal(ctx)
    assert ctx.toxiproxy.toxics == {}


@pytest.mark.parametrize("type_,params,attributes", [
    ("bandwidth", {}, {"rate": 100}),
    ("timeout", {"timeout_ms": 500}, {"timeout": 500}),
    ("reset_peer", {}, {"timeout": 0}),
    ("slow_close", {"delay_ms": 20}, {"delay": 20}),
    ("slicer", {"average_size": 8}, {"average_size": 8, "size_variation": 32, "delay": 1000}),
])
def test_toxic_types_and_defaults(type_, params, attributes):
    f = make_fault("toxic", None, {"type": type_, **params}, "f")
    assert (f.type, f.attributes) == (type_, attributes)


# -- presets -----------------------------------------------------------------------------
LEGACY_NAMES = {
    "kill-leader", "kill-follower", "kill-broker", "terminate-leader", "terminate-broker",
    "bounce-leader", "bounce-leader-hard", "controller-kill", "controller-pause",
    "controller-isolate", "partition-isolate-broker", "partition-halves", "partition-ring",
    "partition-bridge", "partition-leader", "partition-clients", "pause-leader",
    "sigstop-leader", "pause-controller", "disk-full-leader", "zk-session-expiry",
    "rolling-restart"}


def test_presets_keep_every_old_name_and_add_the_missing_kinds():
    assert LEGACY_NAMES <= set(PRESETS)
    kinds = {p.kind for p in PRESETS.values()}
    assert {"log-dir-unwritable", "toxic", "rolling-upgrade"} <= kinds
    assert {"latency-leader", "reset-peer-clients", "rolling-upgrade",
            "log-dir-unwritable-leader"} <= set(PRESETS)


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_every_preset_builds_aimed_at_the_given_partition(name):
    p = preset(name, "orders", 3)
    fault = make_fault(p.kind, p.target, p.params, where=name)
    assert isinstance(fault, BaseFault)
    refs = selector_refs(p.target)
    assert refs in ([], [("orders", 3)])
    assert ("$topic" not in repr(p)) and ("$partition" not in repr(p))
    assert needs_of_preset(name) <= NEEDS


def test_preset_returns_fresh_copies():
    p = preset("latency-replication", "t", 1)
    p.params["listeners"].append("client")
    assert PRESETS["latency-replication"].params["listeners"] == ["replication"]
    assert preset("kill-leader", "a", 5).target == {"leader_of": {"topic": "a", "partition": 5}}


def test_needs_of_preset():
    assert needs_of_preset("latency-leader") == {TOXIPROXY}
    assert needs_of_preset("latency-replication") == {TOXIPROXY, TOXIPROXY_REPLICATION}
    assert needs_of_preset("zk-session-expiry") == {ZOOKEEPER_MODE}
    assert needs_of_preset("rolling-upgrade") == {REPLACEABLE}
    assert needs_of_preset("kill-leader") == frozenset()
    with pytest.raises(SpecError, match="did you mean 'kill-leader'"):
        needs_of_preset("kill-leadr")


def test_fault_factory_builds_presets_for_a_partition(ctx):
    make = fault_factory("t", 2)
    f = make("pause-leader", ctx)
    f.inject(ctx)
    assert [n.name for n in f.targets] == ["kafka-3"] and ctx.cluster.node(3).paused
    f.heal(ctx)
    with pytest.raises(SpecError) as e:
        make("meteor-strike", ctx)
    assert e.value.field == "nemesis.kinds"
