"""What changes between versions, as scenario options: eligible leader replicas
(KIP-966), the consumer group protocol (KIP-848), the Java clients' version."""
import pytest

from clusters.config import format_args
from clusters.spec import ClusterSpec
from core.errors import SpecError
from harness.batch.suite import _configuration, load_suite, version_matches
from harness.scenario import load_scenario
from workloads.consumer import consumer_config
from workloads.spec import ConsumerGroupSpec


def test_elr_follows_the_line_unless_the_scenario_says():
    assert ClusterSpec.kraft_combined("4.0").elr_enabled is False
    assert ClusterSpec.kraft_combined("4.1").elr_enabled is True
    assert ClusterSpec.kraft_combined("3.9").elr_enabled is None
    off = ClusterSpec.from_dict({"version": "4.3", "eligible_leader_replicas": False})
    assert off.elr_enabled is False
    assert format_args(off) == "--feature eligible.leader.replicas.version=0"
    on = ClusterSpec.from_dict({"version": "4.0", "eligible_leader_replicas": True})
    assert format_args(on) == "--feature eligible.leader.replicas.version=1"
    assert format_args(ClusterSpec.kraft_combined("4.1")) == ""     # the line's default: no flag


def test_elr_on_a_line_without_it_is_refused():
    with pytest.raises(SpecError, match="KIP-966 arrived in 4.0") as e:
        ClusterSpec.from_dict({"version": "3.9", "eligible_leader_replicas": True})
    assert e.value.field == "eligible_leader_replicas"
    with pytest.raises(SpecError, match="true or false"):
        ClusterSpec.from_dict({"version": "4.1", "eligible_leader_replicas": "yes"})


def test_the_consumer_protocol_lets_the_broker_assign():
    classic = consumer_config(ConsumerGroupSpec(group_id="g", topics=["t"]), "c0", "b:9092")
    assert "group.protocol" not in classic and classic["partition.assignment.strategy"]
    new = consumer_config(ConsumerGroupSpec(group_id="g", topics=["t"], group_protocol="consumer"),
                          "c0", "b:9092")
    assert new["group.protocol"] == "consumer"
    assert "partition.assignment.strategy" not in new and "session.timeout.ms" not in new
    with pytest.raises(SpecError, match="KIP-848"):
        ConsumerGroupSpec(group_id="g", topics=["t"], group_protocol="next")


def test_the_consumer_protocol_needs_kafka_4():
    with pytest.raises(SpecError, match="GA from Kafka 4.0") as e:
        load_scenario("claim-rebalance-churn-eager", ("consumer.group_protocol=consumer",))
    assert "group_protocol" in e.value.field
    s = load_scenario("claim-rebalance-churn-eager", ("consumer.group_protocol=consumer",
                                                       "cluster.version=4.0"))
    assert s.workload.consumers[0].group_protocol == "consumer"
    assert "group.protocol=consumer" in _configuration(s)


def test_clients_version_resolves_and_defaults_to_the_brokers():
    assert load_scenario("java-clients").workload.clients_version is None
    s = load_scenario("java-clients", ("workload.clients_version=3.8",))
    assert s.workload.clients_version == "3.8.1"
    with pytest.raises(SpecError, match="clients_version"):
        load_scenario("java-clients", ("workload.clients_version=2.1",))


def test_claims_13_and_12_rows_run_on_and_off_on_4x_only():
    claims = load_suite("claims")
    elr = [sets for name, sets in claims.entries() if name == "claim-elr-last-replica-standing"]
    assert elr == [("cluster.eligible_leader_replicas=true",), ("cluster.eligible_leader_replicas=false",)]
    assert version_matches("4.3", ">=4.1") and not version_matches("4.0.2", ">=4.1")
    assert version_matches("4.1.1", "4") and version_matches("3.9.2", "3.9")
    assert not version_matches("3.9.1", "3.9.2")


def test_the_versions_suite_covers_every_line():
    suite = load_suite("versions")
    assert suite.versions == ["3.6", "3.7", "3.8", "3.9", "4.0", "4.1", "4.2", "4.3"]
    assert all(name.startswith(("claim-durable", "claim-controller")) for name in suite.scenarios)
