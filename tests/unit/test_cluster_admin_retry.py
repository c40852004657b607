"""The admin retry policy: which librdkafka errors are retried, and the deadline."""
import time

import pytest
from confluent_kafka import KafkaError, KafkaException

from clusters.admin_retry import AdminError, admin_retry, is_transient


def failing(codes, result="done"):
    """A request that raises these error codes in turn, then answers."""
    calls = []

    def request(budget):
        calls.append(budget)
        if len(calls) <= len(codes):
            code = codes[len(calls) - 1]
            if code == "timeout":
                raise TimeoutError()
            raise KafkaException(KafkaError(code))
        return result
    return request, calls


@pytest.mark.parametrize("code", [
    KafkaError._DESTROY_BROKER, KafkaError._TRANSPORT, KafkaError.NOT_CONTROLLER,
    KafkaError._TIMED_OUT, KafkaError.LEADER_NOT_AVAILABLE, KafkaError._ALL_BROKERS_DOWN,
    KafkaError.REQUEST_TIMED_OUT, KafkaError.BROKER_NOT_AVAILABLE, "timeout"])
def test_transient_errors_are_retried_until_the_request_succeeds(code):
    request, calls = failing([code, code])
    assert admin_retry("creating topic 't'", request, timeout=10) == "done"
    assert len(calls) == 3


def test_destroy_broker_is_transient_though_librdkafka_says_it_is_not():
    err = KafkaError(KafkaError._DESTROY_BROKER)
    assert not err.retriable() and is_transient(err)


@pytest.mark.parametrize("code", [KafkaError.INVALID_REPLICATION_FACTOR,
                                  KafkaError.POLICY_VIOLATION, KafkaError.INVALID_CONFIG,
                                  KafkaError.TOPIC_AUTHORIZATION_FAILED])
def test_fatal_errors_fail_at_once_naming_the_error(code):
    request, calls = failing([code])
    t0 = time.monotonic()
    with pytest.raises(AdminError) as e:
        admin_retry("creating topic 't'", request, timeout=30)
    assert len(calls) == 1 and time.monotonic() - t0 < 1
    assert str(e.value).startswith("creating topic 't' failed: " + KafkaError(code).name())


def test_a_caller_may_widen_what_is_transient():
    request, calls = failing([KafkaError.INVALID_REPLICATION_FACTOR])
    assert admin_retry("x", request, 10, transient=lambda e: True) == "done"
    assert len(calls) == 2


def test_retries_stop_at_the_deadline_with_the_last_error():
    request, calls = failing([KafkaError._TRANSPORT] * 1000)
    t0 = time.monotonic()
    with pytest.raises(AdminError, match=r"within 2 s; last error _TRANSPORT"):
        admin_retry("reading cluster metadata", request, timeout=2, attempt_s=0.5)
    assert 1.5 < time.monotonic() - t0 < 3.5 and len(calls) >= 3
    # No attempt is given more time than is left, nor more than attempt_s.
    assert all(0.5 <= b <= 2 for b in calls)


class StubTopicAdmin:
    """A CreateTopics client whose first request waits for a controller that never
    comes (what librdkafka does while the broker it calls controller is down)."""
    made: list["StubTopicAdmin"] = []

    def __init__(self, conf):
        self.conf = conf
        StubTopicAdmin.made.append(self)

    def create_topics(self, topics, request_timeout):
        from concurrent.futures import Future
        f = Future()
        if len(StubTopicAdmin.made) == 1:
            f.set_exception(KafkaException(KafkaError(KafkaError._TIMED_OUT,
                                                      "Failed while waiting for controller")))
        else:
            f.set_result(None)
        return {t.topic: f for t in topics}


def test_a_create_that_timed_out_is_tried_again_on_a_new_client(monkeypatch):
    # CI, stop 45: one client stuck waiting for a controller failed every create for 90 s.
    import clusters.docker_cluster as dc
    from clusters.spec import ClusterSpec
    StubTopicAdmin.made = []
    monkeypatch.setattr(dc, "AdminClient", StubTopicAdmin)
    cluster = dc.DockerCluster(ClusterSpec.kraft_combined("3.9"))
    monkeypatch.setattr(cluster, "bootstrap_servers", lambda: "127.0.0.1:1")
    monkeypatch.setattr(cluster, "partitions", lambda name, timeout: [])
    with pytest.raises(dc.ClusterUnhealthy):      # created; no stub leader to wait for
        cluster.create_topic("t", 1, 1, timeout=3)
    assert len(StubTopicAdmin.made) == 2
    assert StubTopicAdmin.made[1].conf["topic.metadata.refresh.interval.ms"] == 5000
