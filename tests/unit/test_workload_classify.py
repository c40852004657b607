"""The error -> status table: the rules the reconciler's verdicts rest on."""
from confluent_kafka import KafkaError as E

from workloads import classify


def test_success_is_acked():
    assert classify.status_of(None) == "acked"
    assert classify.status_of_code(None) == "acked"


def test_never_sent_is_failed_but_in_flight_is_indeterminate():
    assert classify.status_of(E(E._PURGE_QUEUE)) == "failed"
    assert classify.status_of(E(E._PURGE_INFLIGHT)) == "indeterminate"


def test_timeouts_and_lost_connections_are_indeterminate():
    for code in (E._MSG_TIMED_OUT, E._TIMED_OUT, E._TRANSPORT, E.REQUEST_TIMED_OUT,
                 E.NOT_ENOUGH_REPLICAS_AFTER_APPEND, E.NOT_LEADER_FOR_PARTITION):
        assert classify.status_of_code(code) == "indeterminate", E(code).name()


def test_deterministic_rejections_are_failed():
    for code in (E.MSG_SIZE_TOO_LARGE, E.RECORD_LIST_TOO_LARGE, E.INVALID_RECORD,
                 E.TOPIC_AUTHORIZATION_FAILED, E._UNKNOWN_TOPIC):
        assert classify.status_of_code(code) == "failed", E(code).name()


def test_unknown_errors_default_to_indeterminate():
    assert classify.status_of_code(E.UNKNOWN) == "indeterminate"
    assert classify.status_of_code(-12345) == "indeterminate"


def test_every_table_entry_is_a_known_status_and_has_a_reason_comment():
    src = open(classify.__file__).read()
    table = src[src.index("LIBRDKAFKA_STATUS: dict"):src.index("JAVA_STATUS: dict")]
    lines = [x.strip() for x in table.splitlines()[1:] if x.strip() and x.strip() != "}"]
    # every run of entries is preceded by a comment saying why
    assert lines[0].startswith("#")
    for prev, line in zip(lines, lines[1:]):
        if line.startswith("E.") and not (prev.startswith("#") or prev.startswith("E.")):
            raise AssertionError(f"entry without a reason: {line}")
    assert set(classify.LIBRDKAFKA_STATUS.values()) <= {"failed", "indeterminate"}
    assert set(classify.JAVA_STATUS.values()) <= {"failed", "indeterminate"}


def test_java_exceptions():
    assert classify.java_status("class org.apache.kafka.common.errors.TimeoutException") == "indeterminate"
    assert classify.java_status("class org.apache.kafka.common.errors.RecordTooLargeException") == "failed"
    assert classify.java_status("class com.example.Weird") == "indeterminate"
    assert classify.java_status(None) == "indeterminate"


def test_error_names():
    assert classify.error_name(E._MSG_TIMED_OUT) == "_MSG_TIMED_OUT"
    assert classify.error_name(E.MSG_SIZE_TOO_LARGE) == "MSG_SIZE_TOO_LARGE"
