"""Client error -> record status: the one table that decides `failed` vs `indeterminate`.

The rule behind every entry: a record is `failed` only when *no* attempt to
send it can have been appended to a log. The delivery report carries the error
of the *last* attempt, and the Python client does not expose librdkafka's
per-message persistence status, so any error an earlier attempt could have
preceded with a silent append (a timeout, a lost connection, a leader change)
is `indeterminate`. Only errors every attempt would have met the same way
(size, format, authorization) or that say the record never left the client
are `failed`. Anything not in the table is `indeterminate`: we never claim a
record was not written unless we know.

`acked` is the absence of an error. Under `acks=0` the client reports success
once the request is written to the socket: we record those as `acked` with a
null offset (see workloads/README.md) so that a lost acks=0 record shows up
as `lost` in the reconciler, which is the comparison users run acks=0 for.
"""
from __future__ import annotations

from confluent_kafka import KafkaError

ACKED = "acked"
FAILED = "failed"
INDETERMINATE = "indeterminate"

E = KafkaError

# librdkafka / broker error code -> status. A comment per entry says why.
LIBRDKAFKA_STATUS: dict[int, str] = {
    # Never handed to a broker: purged from the local queue on close/kill.
    E._PURGE_QUEUE: FAILED,
    # Purged while a produce request was on the wire: the broker may have appended it.
    E._PURGE_INFLIGHT: INDETERMINATE,
    # delivery.timeout.ms expired: an earlier attempt may have been appended.
    E._MSG_TIMED_OUT: INDETERMINATE,
    # Local request timeout: the request may have reached the leader.
    E._TIMED_OUT: INDETERMINATE,
    # Connection dropped with the request in flight: outcome unknown.
    E._TRANSPORT: INDETERMINATE,
    # Every broker down: earlier attempts may have been appended before that.
    E._ALL_BROKERS_DOWN: INDETERMINATE,
    # Idempotent/transactional producer hit a fatal error: in-flight batches unknown.
    E._FATAL: INDETERMINATE,
    # Producer fenced by a newer instance: its open batches have unknown fate.
    E._FENCED: INDETERMINATE,
    E.PRODUCER_FENCED: INDETERMINATE,
    E.INVALID_PRODUCER_EPOCH: INDETERMINATE,
    # Broker-side timeout waiting for replication: appended on the leader, maybe kept.
    E.REQUEST_TIMED_OUT: INDETERMINATE,
    # Appended on the leader, then too few replicas: the leader keeps it in its log.
    E.NOT_ENOUGH_REPLICAS_AFTER_APPEND: INDETERMINATE,
    # Rejected before append, but it is retriable: an earlier attempt may have landed.
    E.NOT_ENOUGH_REPLICAS: INDETERMINATE,
    # Leader moved; retriable, so an earlier attempt may have been appended.
    E.NOT_LEADER_FOR_PARTITION: INDETERMINATE,
    E.LEADER_NOT_AVAILABLE: INDETERMINATE,
    E.FENCED_LEADER_EPOCH: INDETERMINATE,
    E.NETWORK_EXCEPTION: INDETERMINATE,
    E.KAFKA_STORAGE_ERROR: INDETERMINATE,
    # Idempotence sequence gap: the broker lost or reordered a batch; unknown.
    E.OUT_OF_ORDER_SEQUENCE_NUMBER: INDETERMINATE,
    E.UNKNOWN_PRODUCER_ID: INDETERMINATE,
    # Every attempt carries the same bytes, so every attempt is rejected: not written.
    E.MSG_SIZE_TOO_LARGE: FAILED,
    E.RECORD_LIST_TOO_LARGE: FAILED,
    E.INVALID_RECORD: FAILED,
    E.INVALID_MSG_SIZE: FAILED,
    E.INVALID_TIMESTAMP: FAILED,
    E.UNSUPPORTED_FOR_MESSAGE_FORMAT: FAILED,
    E.INVALID_REQUIRED_ACKS: FAILED,
    # Authorization is checked before append on every attempt.
    E.TOPIC_AUTHORIZATION_FAILED: FAILED,
    E.CLUSTER_AUTHORIZATION_FAILED: FAILED,
    E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED: FAILED,
    # Topic does not exist (and auto-create is off): nothing to append to.
    E._UNKNOWN_TOPIC: FAILED,
    E._UNKNOWN_PARTITION: FAILED,
    # The client refused a bad argument (e.g. partition out of range) before sending.
    E._INVALID_ARG: FAILED,
}

# Java client exception simple name -> status, for VerifiableProducer's
# producer_send_error events. Same rule as above.
JAVA_STATUS: dict[str, str] = {
    # delivery.timeout.ms expired: an earlier attempt may have been appended.
    "TimeoutException": INDETERMINATE,
    # Broker-side replication timeout: appended on the leader.
    "NotEnoughReplicasAfterAppendException": INDETERMINATE,
    # Retriable, so an earlier attempt may have been appended.
    "NotEnoughReplicasException": INDETERMINATE,
    "NotLeaderOrFollowerException": INDETERMINATE,
    "NotLeaderForPartitionException": INDETERMINATE,
    "NetworkException": INDETERMINATE,
    "DisconnectException": INDETERMINATE,
    "KafkaStorageException": INDETERMINATE,
    "OutOfOrderSequenceException": INDETERMINATE,
    "UnknownProducerIdException": INDETERMINATE,
    "ProducerFencedException": INDETERMINATE,
    # The sending thread was interrupted: the request may have been on the wire.
    "InterruptException": INDETERMINATE,
    # Same bytes on every attempt, rejected every time: not written.
    "RecordTooLargeException": FAILED,
    "RecordBatchTooLargeException": FAILED,
    "InvalidRecordException": FAILED,
    "CorruptRecordException": FAILED,
    "TopicAuthorizationException": FAILED,
    "ClusterAuthorizationException": FAILED,
    "SerializationException": FAILED,
}


def status_of(error: KafkaError | None) -> str:
    """Status of a record whose delivery report carried `error` (None = success)."""
    if error is None:
        return ACKED
    return LIBRDKAFKA_STATUS.get(error.code(), INDETERMINATE)


def status_of_code(code: int | None) -> str:
    if code is None:
        return ACKED
    return LIBRDKAFKA_STATUS.get(code, INDETERMINATE)


def java_status(exception: str | None) -> str:
    """Status for a Java exception name, e.g. 'class org.apache...TimeoutException'."""
    if not exception:
        return INDETERMINATE
    simple = exception.replace("class ", "").strip().rsplit(".", 1)[-1]
    return JAVA_STATUS.get(simple, INDETERMINATE)


def error_name(code: int) -> str:
    """librdkafka's name for an error code (e.g. '_MSG_TIMED_OUT')."""
    try:
        return KafkaError(code).name()
    except Exception:  # unknown code: keep the number, never lose the row
        return f"ERR_{code}"


# -- share groups (KIP-932): what an acknowledgement's answer says -------------------
# Only an answer with no error, and a definite refusal, are facts; anything else may
# have been applied by the share-partition leader (a NOT_LEADER_OR_FOLLOWER is made up
# by librdkafka locally, and by Kafka's Java client for a disconnection noticed
# mid-request since KAFKA-20330), so it is `unknown`.
SHARE_ACK_REFUSED = frozenset({
    "INVALID_RECORD_STATE", "InvalidRecordStateException",   # the lock had expired
    "INVALID_REQUEST", "InvalidRequestException",
    "ILLEGAL_STATE", "IllegalStateException",                # acknowledge() refused locally
    "TOPIC_AUTHORIZATION_FAILED", "GROUP_AUTHORIZATION_FAILED",
    "TopicAuthorizationException", "GroupAuthorizationException",
})


def share_ack_result(error: str | None) -> str:
    """An acknowledgement's answer -> share_deliveries.ack_result: ok, error or unknown."""
    if error is None:
        return "ok"
    return "error" if error in SHARE_ACK_REFUSED else "unknown"
