from clusters.config import plan_nodes
from clusters.spec import ClusterSpec


def props(text):
    return dict(line.split("=", 1) for line in text.strip().splitlines())


def test_combined_nodes_are_voters_with_two_listeners():
    plans = plan_nodes(ClusterSpec.kraft_combined("3.9"))
    assert [p.alias for p in plans] == ["kafka-1", "kafka-2", "kafka-3"]
    p = props(plans[0].config)
    assert p["process.roles"] == "broker,controller"
    assert p["controller.quorum.voters"] == "1@kafka-1:9094,2@kafka-2:9094,3@kafka-3:9094"
    assert p["advertised.listeners"] == "CLIENT://@SELF_IP@:9092,INTERNAL://kafka-1:9093"
    assert p["inter.broker.listener.name"] == "INTERNAL"


def test_isolated_controllers_start_first_and_brokers_are_brokers_only():
    plans = plan_nodes(ClusterSpec.kraft_isolated("4", brokers=4, controllers=3))
    assert [p.alias for p in plans][:3] == ["controller-1", "controller-2", "controller-3"]
    assert props(plans[0].config)["process.roles"] == "controller"
    broker = props(plans[3].config)
    assert broker["process.roles"] == "broker" and broker["node.id"] == "1"
    assert broker["controller.quorum.voters"].startswith("1001@controller-1:9094")


def test_zookeeper_mode_and_overrides():
    spec = ClusterSpec.zookeeper("3.9", zookeepers=3).with_config(
        {"min.insync.replicas": 2}).with_broker_config(3, {"num.io.threads": 2})
    plans = plan_nodes(spec)
    assert [p.alias for p in plans] == ["zk-1", "zk-2", "zk-3", "broker-1", "broker-2", "broker-3"]
    assert "server.3=zk-3:2888:3888" in plans[0].config
    b1, b3 = props(plans[3].config), props(plans[5].config)
    assert b1["zookeeper.connect"] == "zk-1:2181,zk-2:2181,zk-3:2181"
    assert b1["min.insync.replicas"] == "2" and b3["num.io.threads"] == "2"
    assert b1["num.io.threads"] == "4"   # harness default stays for the others
    assert "process.roles" not in b1


def test_toxiproxy_routes_advertised_listeners():
    plans = plan_nodes(ClusterSpec.kraft_combined("3.9").with_toxiproxy("client+replication"))
    p = props(plans[1].config)
    assert p["advertised.listeners"] == "CLIENT://@TOXIPROXY_IP@:19002,INTERNAL://toxiproxy:29002"


SHARE_KEYS = ("share.coordinator.state.topic.replication.factor",
              "share.coordinator.state.topic.min.isr", "share.coordinator.state.topic.num.partitions")


def test_share_state_topic_defaults_on_lines_with_share_groups_only():
    for version in ("3.9", "4.0"):
        broker = props(plan_nodes(ClusterSpec.kraft_combined(version))[0].config)
        assert not any(k.startswith("share.") for k in broker), version
    three = props(plan_nodes(ClusterSpec.kraft_combined("4.1"))[0].config)
    assert [three[k] for k in SHARE_KEYS] == ["3", "2", "10"]
    one = props(plan_nodes(ClusterSpec.kraft_combined("4.3", nodes=1))[0].config)
    assert [one[k] for k in SHARE_KEYS] == ["1", "1", "10"]
    # isolated: brokers get them, controllers (which never host the topic) do not
    plans = plan_nodes(ClusterSpec.kraft_isolated("4.2", brokers=2, controllers=1))
    assert not any(k.startswith("share.") for k in props(plans[0].config))
    assert [props(plans[1].config)[k] for k in SHARE_KEYS] == ["2", "2", "10"]
    # a user's value wins
    mine = ClusterSpec.kraft_combined("4.3").with_config(
        {"share.coordinator.state.topic.num.partitions": 50})
    assert props(plan_nodes(mine)[0].config)["share.coordinator.state.topic.num.partitions"] == "50"


def test_share_version_formats_the_cluster_only_where_set():
    from clusters.config import format_args
    assert format_args(ClusterSpec.from_dict({"version": "4.1.2", "share_version": 1})) \
        == "--feature share.version=1"
    assert format_args(ClusterSpec.from_dict({"version": "4.3.1", "share_version": 0})) \
        == "--feature share.version=0"
    for version in ("4.1.2", "4.2.2", "4.3.1"):
        assert "share.version" not in format_args(ClusterSpec.from_dict({"version": version}))
