"""DockerCluster.create_topic's last wait (without Docker): until every broker that
answers reports the new topic's partitions led, since a client asking a broker that
has not learnt it yet sees no topic (a consumer group then assigns nothing)."""
import time

from clusters.docker_cluster import DockerCluster
from clusters.metadata_probe import BrokerView, PartitionView
from clusters.spec import ClusterSpec


def _view(*partitions: int, topic: str = "t") -> BrokerView:
    return BrokerView(None, [PartitionView(topic, p, 1, 0, (1, 2), (1, 2)) for p in partitions])


def _cluster(answers: list[dict]) -> tuple[DockerCluster, list[float]]:
    """A cluster whose brokers answer metadata as `answers` says, one dict per ask
    (the last one again once they run out)."""
    cluster = DockerCluster(ClusterSpec.kraft_combined("4.3", 2), run_id="unit")
    asked = []

    def views(topics, timeout):
        asked.append(time.monotonic())
        return answers[min(len(asked), len(answers)) - 1]
    cluster._broker_views = views
    return cluster, asked


def test_waits_until_every_answering_broker_has_every_partition():
    lagging = {"kafka-1": _view(0, 1, 2), "kafka-2": _view(0, 1)}
    cluster, asked = _cluster([lagging, lagging, {"kafka-1": _view(0, 1, 2), "kafka-2": _view(0, 1, 2)}])
    cluster._wait_known_everywhere("t", 3, time.monotonic() + 10)
    assert len(asked) == 3


def test_another_topics_partitions_do_not_count():
    cluster, asked = _cluster([{"kafka-1": _view(0, 1, topic="other")}, {"kafka-1": _view(0, 1)}])
    cluster._wait_known_everywhere("t", 2, time.monotonic() + 10)
    assert len(asked) == 2


def test_gives_up_at_the_deadline_without_raising(caplog):
    cluster, asked = _cluster([{"kafka-1": _view(0)}])
    started = time.monotonic()
    cluster._wait_known_everywhere("t", 2, started + 0.5)
    assert 0.5 <= time.monotonic() - started < 2 and len(asked) >= 2
    assert "not every broker reports it yet" in caplog.text
