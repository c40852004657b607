"""Kafka requests as a proxy sees them: API names, request headers, and the error
responses we can write ourselves (clusters/protocol_proxy.py uses them).

    header = parse_request_header(frame)        # a request without its 4-byte size
    header.api, header.version, header.correlation_id, header.client_id
    response = error_response(frame, header, NOT_LEADER_OR_FOLLOWER)   # with its size

Request header v1 (non-flexible requests): api key, api version, correlation id,
client id (a NULLABLE_STRING). Header v2 (flexible requests, KIP-482) is v1 and a
tagged-field section; the client id stays a non-compact string in both. Header v0
(ControlledShutdown v0 only) has no client id. Response header v0 is the correlation
id; v1 adds tagged fields (flexible responses, except ApiVersions, which always
answers with v0 so that any client can read it).

Error responses we encode (`ENCODABLE`, with the versions each covers):
  Produce          v0-v13 (v13: topics by id), one error for every partition asked for
  Fetch            v0-v18 (v13+: topics by id), one error for every partition asked for;
                   no top-level error, and session id 0: it closes a fetch session, so
                   the client's next fetch is a full one (an incremental fetch that names
                   no partition gets no error)
  FindCoordinator  v0-v6  (v4+: one entry per key asked for)
  EndTxn           v0-v5
  AddPartitionsToTxn v0-v5 (v4+: the top-level error, and every transaction's partitions)
  ShareAcknowledge v0-v2 (KIP-932; v0 is 4.0's early access), one error for every
                   partition asked for; no top-level error, no leader named
"""
from __future__ import annotations

import struct
from dataclasses import dataclass

from clusters.kafka_wire import _skip_tags, _uvarint, compact_string, uvarint

# API key -> name, as Kafka's message specs name them (3.9's and 4.3's
# common/message/*Request.json; 74 was ListClientMetricsResources before 4.1).
API_NAMES: dict[int, str] = {
    0: "Produce", 1: "Fetch", 2: "ListOffsets", 3: "Metadata", 4: "LeaderAndIsr", 5:
    "StopReplica", 6: "UpdateMetadata", 7: "ControlledShutdown", 8: "OffsetCommit", 9:
    "OffsetFetch", 10: "FindCoordinator", 11: "JoinGroup", 12: "Heartbeat", 13:
    "LeaveGroup", 14: "SyncGroup", 15: "DescribeGroups", 16: "ListGroups", 17:
    "SaslHandshake", 18: "ApiVersions", 19: "CreateTopics", 20: "DeleteTopics", 21:
    "DeleteRecords", 22: "InitProducerId", 23: "OffsetForLeaderEpoch", 24:
    "AddPartitionsToTxn", 25: "AddOffsetsToTxn", 26: "EndTxn", 27: "WriteTxnMarkers", 28:
    "TxnOffsetCommit", 29: "DescribeAcls", 30: "CreateAcls", 31: "DeleteAcls", 32:
    "DescribeConfigs", 33: "AlterConfigs", 34: "AlterReplicaLogDirs", 35:
    "DescribeLogDirs", 36: "SaslAuthenticate", 37: "CreatePartitions", 38:
    "CreateDelegationToken", 39: "RenewDelegationToken", 40: "ExpireDelegationToken", 41:
    "DescribeDelegationToken", 42: "DeleteGroups", 43: "ElectLeaders", 44:
    "IncrementalAlterConfigs", 45: "AlterPartitionReassignments", 46:
    "ListPartitionReassignments", 47: "OffsetDelete", 48: "DescribeClientQuotas", 49:
    "AlterClientQuotas", 50: "DescribeUserScramCredentials", 51:
    "AlterUserScramCredentials", 52: "Vote", 53: "BeginQuorumEpoch", 54: "EndQuorumEpoch",
    55: "DescribeQuorum", 56: "AlterPartition", 57: "UpdateFeatures", 58: "Envelope", 59:
    "FetchSnapshot", 60: "DescribeCluster", 61: "DescribeProducers", 62:
    "BrokerRegistration", 63: "BrokerHeartbeat", 64: "UnregisterBroker", 65:
    "DescribeTransactions", 66: "ListTransactions", 67: "AllocateProducerIds", 68:
    "ConsumerGroupHeartbeat", 69: "ConsumerGroupDescribe", 70: "ControllerRegistration",
    71: "GetTelemetrySubscriptions", 72: "PushTelemetry", 73: "AssignReplicasToDirs", 74:
    "ListConfigResources", 75: "DescribeTopicPartitions", 76: "ShareGroupHeartbeat", 77:
    "ShareGroupDescribe", 78: "ShareFetch", 79: "ShareAcknowledge", 80: "AddRaftVoter",
    81: "RemoveRaftVoter", 82: "UpdateRaftVoter", 83: "InitializeShareGroupState", 84:
    "ReadShareGroupState", 85: "WriteShareGroupState", 86: "DeleteShareGroupState", 87:
    "ReadShareGroupStateSummary", 88: "StreamsGroupHeartbeat", 89: "StreamsGroupDescribe",
    90: "DescribeShareGroupOffsets", 91: "AlterShareGroupOffsets", 92:
    "DeleteShareGroupOffsets",
}
API_KEYS: dict[str, int] = {name: key for key, name in API_NAMES.items()}
API_KEYS["ListClientMetricsResources"] = 74

# The first flexible version of each API's requests and responses (`flexibleVersions`
# in the same specs); absent: none of its versions is flexible.
FLEXIBLE_FROM: dict[int, int] = {
    0: 9, 1: 12, 2: 6, 3: 9, 4: 4, 5: 2, 6: 6, 7: 3, 8: 8, 9: 6, 10: 3, 11: 6, 12: 4, 13:
    4, 14: 4, 15: 5, 16: 3, 18: 3, 19: 5, 20: 4, 21: 2, 22: 2, 23: 4, 24: 3, 25: 3, 26: 3,
    27: 1, 28: 3, 29: 2, 30: 2, 31: 2, 32: 4, 33: 2, 34: 2, 35: 2, 36: 2, 37: 2, 38: 2,
    39: 2, 40: 2, 41: 2, 42: 2, 43: 2, 44: 1, 45: 0, 46: 0, 48: 1, 49: 1, 50: 0, 51: 0,
    52: 0, 53: 1, 54: 1, 55: 0, 56: 0, 57: 0, 58: 0, 59: 0, 60: 0, 61: 0, 62: 0, 63: 0,
    64: 0, 65: 0, 66: 0, 67: 0, 68: 0, 69: 0, 70: 0, 71: 0, 72: 0, 73: 0, 74: 0, 75: 0,
    76: 0, 77: 0, 78: 0, 79: 0, 80: 0, 81: 0, 82: 0, 83: 0, 84: 0, 85: 0, 86: 0, 87: 0,
    88: 0, 89: 0, 90: 0, 91: 0, 92: 0,
}
PRODUCE, FIND_COORDINATOR, API_VERSIONS, END_TXN, CONTROLLED_SHUTDOWN = 0, 10, 18, 26, 7
FETCH, ADD_PARTITIONS_TO_TXN, SHARE_ACKNOWLEDGE = 1, 24, 79

# Error codes (Kafka's Errors) a rule may name.
ERROR_CODES: dict[str, int] = {
    "UNKNOWN_SERVER_ERROR": -1, "CORRUPT_MESSAGE": 2, "UNKNOWN_TOPIC_OR_PARTITION": 3,
    "LEADER_NOT_AVAILABLE": 5, "NOT_LEADER_OR_FOLLOWER": 6, "REQUEST_TIMED_OUT": 7,
    "NETWORK_EXCEPTION": 13, "COORDINATOR_LOAD_IN_PROGRESS": 14,
    "COORDINATOR_NOT_AVAILABLE": 15, "NOT_COORDINATOR": 16, "NOT_ENOUGH_REPLICAS": 19,
    "NOT_ENOUGH_REPLICAS_AFTER_APPEND": 20, "INVALID_PRODUCER_EPOCH": 47,
    "CONCURRENT_TRANSACTIONS": 51, "KAFKA_STORAGE_ERROR": 56, "OUT_OF_ORDER_SEQUENCE_NUMBER": 45,
    "UNKNOWN_PRODUCER_ID": 59, "THROTTLING_QUOTA_EXCEEDED": 89,
    "OFFSET_NOT_AVAILABLE": 78, "FENCED_LEADER_EPOCH": 74, "UNKNOWN_LEADER_EPOCH": 75,
    "INVALID_RECORD_STATE": 121, "SHARE_SESSION_NOT_FOUND": 122,
    "INVALID_SHARE_SESSION_EPOCH": 123,
}


def is_flexible(api_key: int, version: int) -> bool:
    first = FLEXIBLE_FROM.get(api_key)
    return first is not None and version >= first


@dataclass(frozen=True)
class RequestHeader:
    api_key: int
    version: int
    correlation_id: int
    client_id: str | None
    body_at: int           # where the request body starts in the frame

    @property
    def api(self) -> str:
        return API_NAMES.get(self.api_key, f"api-{self.api_key}")

    @property
    def flexible(self) -> bool:
        return is_flexible(self.api_key, self.version)


def parse_request_header(frame: bytes) -> RequestHeader:
    """The header of one request (the frame without its size); raises ValueError
    (struct.error) on a frame too short for its header."""
    api_key, version, correlation = struct.unpack_from(">hhi", frame, 0)
    at, client_id = 8, None
    if not (api_key == CONTROLLED_SHUTDOWN and version == 0):
        n = struct.unpack_from(">h", frame, at)[0]
        at += 2
        if n >= 0:
            if at + n > len(frame):
                raise ValueError(f"client id of {n} bytes runs past a {len(frame)}-byte frame")
            client_id = frame[at:at + n].decode(errors="replace")
            at += n
        if is_flexible(api_key, version):
            at = _skip_tags(frame, at)
    return RequestHeader(api_key, version, correlation, client_id, at)


def response_correlation_id(frame: bytes) -> int:
    return struct.unpack_from(">i", frame, 0)[0]


# -- reading request bodies ---------------------------------------------------------

class _Reader:
    def __init__(self, data: bytes, at: int, flexible: bool):
        self.data, self.at, self.flexible = data, at, flexible

    def take(self, fmt: str):
        value = struct.unpack_from(fmt, self.data, self.at)[0]
        self.at += struct.calcsize(fmt)
        return value

    def raw(self, n: int) -> bytes:
        out = self.data[self.at:self.at + n]
        self.at += n
        return out

    def _length(self, wide: str) -> int:
        if self.flexible:
            value, self.at = _uvarint(self.data, self.at)
            return value - 1
        return self.take(wide)

    def string(self) -> str | None:
        n = self._length(">h")
        return None if n < 0 else self.raw(n).decode(errors="replace")

    def records_count(self) -> int:
        """Skip a RECORDS field; how many records its batches hold (magic 2 batches:
        the count sits 57 bytes into each; older message sets count as 0)."""
        n, total = self._length(">i"), 0
        end, at = self.at + max(0, n), self.at
        while at + 61 <= end:
            batch_length, magic = struct.unpack_from(">ib", self.data, at + 8)[0], self.data[at + 16]
            if magic == 2:
                total += struct.unpack_from(">i", self.data, at + 57)[0]
            at += 12 + batch_length
        self.at = end
        return total

    def count(self) -> int:
        return self._length(">i")

    def tags(self) -> None:
        if self.flexible:
            self.at = _skip_tags(self.data, self.at)


class _Writer:
    def __init__(self, flexible: bool):
        self.out, self.flexible = bytearray(), flexible

    def put(self, fmt: str, *values) -> "_Writer":
        self.out += struct.pack(fmt, *values)
        return self

    def raw(self, data: bytes) -> "_Writer":
        self.out += data
        return self

    def string(self, s: str | None) -> "_Writer":
        if self.flexible:
            return self.raw(compact_string(s))
        if s is None:
            return self.put(">h", -1)
        data = s.encode()
        return self.put(">h", len(data)).raw(data)

    def count(self, n: int) -> "_Writer":
        return self.raw(uvarint(n + 1)) if self.flexible else self.put(">i", n)

    def tags(self) -> "_Writer":
        return self.raw(b"\x00") if self.flexible else self


@dataclass(frozen=True)
class ProduceTopic:
    name: str | None        # v0-v12
    topic_id: bytes | None  # v13+
    partitions: tuple[int, ...]
    records: int = 0        # in all its partitions' batches (v2 batches)


@dataclass(frozen=True)
class ProduceRequest:
    transactional_id: str | None
    acks: int
    timeout_ms: int
    topics: tuple[ProduceTopic, ...]

    @property
    def records(self) -> int:
        return sum(t.records for t in self.topics)


def parse_produce(frame: bytes, header: RequestHeader) -> ProduceRequest:
    """Produce v0-v13: what an error response must echo (topics, partitions) and acks."""
    r = _Reader(frame, header.body_at, header.flexible)
    txn_id = r.string() if header.version >= 3 else None
    acks, timeout_ms = r.take(">h"), r.take(">i")
    topics = []
    for _ in range(max(0, r.count())):
        name, topic_id = (None, r.raw(16)) if header.version >= 13 else (r.string(), None)
        partitions, records = [], 0
        for _ in range(max(0, r.count())):
            partitions.append(r.take(">i"))
            records += r.records_count()
            r.tags()
        r.tags()
        topics.append(ProduceTopic(name, topic_id, tuple(partitions), records))
    return ProduceRequest(txn_id, acks, timeout_ms, tuple(topics))


def expects_response(frame: bytes, header: RequestHeader) -> bool:
    """Whether the broker answers: every request but a Produce with acks=0."""
    if header.api_key != PRODUCE:
        return True
    return parse_produce(frame, header).acks != 0


# -- error responses ------------------------------------------------------------------

def _produce_error_body(frame: bytes, header: RequestHeader, error: int) -> bytes:
    v, w = header.version, _Writer(header.flexible)
    request = parse_produce(frame, header)
    w.count(len(request.topics))
    for topic in request.topics:
        w.raw(topic.topic_id) if v >= 13 else w.string(topic.name)
        w.count(len(topic.partitions))
        for index in topic.partitions:
            w.put(">ihq", index, error, -1)
            if v >= 2:
                w.put(">q", -1)                     # log_append_time_ms
            if v >= 5:
                w.put(">q", -1)                     # log_start_offset
            if v >= 8:
                w.count(0).string(None)             # record_errors, error_message
            w.tags()
        w.tags()
    if v >= 1:
        w.put(">i", 0)                              # throttle_time_ms
    return bytes(w.tags().out)


def _find_coordinator_keys(frame: bytes, header: RequestHeader) -> list[str]:
    r = _Reader(frame, header.body_at, header.flexible)
    if header.version < 4:
        return [r.string() or ""]
    r.take(">b")                                    # key_type comes first from v4
    return [r.string() or "" for _ in range(max(0, r.count()))]


def _find_coordinator_error_body(frame: bytes, header: RequestHeader, error: int) -> bytes:
    v, w = header.version, _Writer(header.flexible)
    if v >= 1:
        w.put(">i", 0)                              # throttle_time_ms
    if v < 4:
        w.put(">h", error)
        if v >= 1:
            w.string(None)                          # error_message
        w.put(">i", -1).string("").put(">i", -1)    # node_id, host, port
        return bytes(w.tags().out)
    keys = _find_coordinator_keys(frame, header)
    w.count(len(keys))
    for key in keys:
        w.string(key).put(">i", -1).string("").put(">i", -1).put(">h", error).string(None).tags()
    return bytes(w.tags().out)


def _topic_partitions(r: _Reader) -> list[tuple[str, list[int]]]:
    topics = []
    for _ in range(max(0, r.count())):
        name = r.string() or ""
        partitions = [r.take(">i") for _ in range(max(0, r.count()))]
        r.tags()
        topics.append((name, partitions))
    return topics


def _add_partitions_request(frame: bytes, header: RequestHeader) -> list[tuple[str, list]]:
    """(transactional id, [(topic, [partition])]) for each transaction asked about."""
    r = _Reader(frame, header.body_at, header.flexible)
    if header.version < 4:
        txn_id = r.string() or ""
        r.take(">q"), r.take(">h")                  # producer id, epoch
        return [(txn_id, _topic_partitions(r))]
    transactions = []
    for _ in range(max(0, r.count())):
        txn_id = r.string() or ""
        r.take(">q"), r.take(">h"), r.take(">b")    # producer id, epoch, verify_only
        transactions.append((txn_id, _topic_partitions(r)))
        r.tags()
    return transactions


def _topic_results(w: _Writer, topics: list[tuple[str, list[int]]], error: int) -> None:
    w.count(len(topics))
    for name, partitions in topics:
        w.string(name).count(len(partitions))
        for index in partitions:
            w.put(">ih", index, error).tags()
        w.tags()


def _add_partitions_error_body(frame: bytes, header: RequestHeader, error: int) -> bytes:
    """v0-v3: each partition gets the error; v4+ (brokers verifying for a leader): the
    top-level error and each transaction's partitions too."""
    w = _Writer(header.flexible).put(">i", 0)       # throttle_time_ms
    transactions = _add_partitions_request(frame, header)
    if header.version < 4:
        _topic_results(w, transactions[0][1], error)
        return bytes(w.tags().out)
    w.put(">h", error).count(len(transactions))
    for txn_id, topics in transactions:
        w.string(txn_id)
        _topic_results(w, topics, error)
        w.tags()
    return bytes(w.tags().out)


def _end_txn_error_body(frame: bytes, header: RequestHeader, error: int) -> bytes:
    w = _Writer(header.flexible).put(">ih", 0, error)   # throttle_time_ms, error_code
    if header.version >= 5:
        w.put(">qh", -1, -1)                            # producer_id, producer_epoch
    return bytes(w.tags().out)


def _fetch_topics(frame: bytes, header: RequestHeader) -> list[tuple[bytes | str, list[int]]]:
    """(topic name, or id from v13, [partition]) of a Fetch request v0-v18."""
    v = header.version
    r = _Reader(frame, header.body_at, header.flexible)
    # replica_id (to v14), max_wait_ms, min_bytes, max_bytes (v3+), isolation_level
    # (v4+), session_id and session_epoch (v7+)
    r.at += struct.calcsize(">" + ("i" if v <= 14 else "") + "ii" + ("i" if v >= 3 else "")
                            + ("b" if v >= 4 else "") + ("ii" if v >= 7 else ""))
    # per partition after its index: current_leader_epoch (v9+), fetch_offset,
    # last_fetched_epoch (v12+), log_start_offset (v5+), partition_max_bytes
    partition_rest = struct.calcsize(">" + ("i" if v >= 9 else "") + "q" + ("i" if v >= 12 else "")
                                     + ("q" if v >= 5 else "") + "i")
    topics = []
    for _ in range(max(0, r.count())):
        topic = r.raw(16) if v >= 13 else (r.string() or "")
        partitions = []
        for _ in range(max(0, r.count())):
            partitions.append(r.take(">i"))
            r.at += partition_rest
            r.tags()
        r.tags()
        topics.append((topic, partitions))
    return topics


def _fetch_error_body(frame: bytes, header: RequestHeader, error: int) -> bytes:
    v, w = header.version, _Writer(header.flexible)
    if v >= 1:
        w.put(">i", 0)                              # throttle_time_ms
    if v >= 7:
        w.put(">hi", 0, 0)                          # no top-level error; session 0: closed
    topics = _fetch_topics(frame, header)
    w.count(len(topics))
    for topic, partitions in topics:
        w.raw(topic) if v >= 13 else w.string(topic)
        w.count(len(partitions))
        for index in partitions:
            w.put(">ihq", index, error, -1)         # high watermark
            if v >= 4:
                w.put(">q", -1)                     # last_stable_offset
            if v >= 5:
                w.put(">q", -1)                     # log_start_offset
            if v >= 4:
                w.count(-1)                         # aborted_transactions: null
            if v >= 11:
                w.put(">i", -1)                     # preferred_read_replica
            w.count(-1).tags()                      # records: null
        w.tags()
    return bytes(w.tags().out)


def _share_acknowledge_partitions(frame: bytes, header: RequestHeader) -> list[tuple[bytes, list[int]]]:
    """(topic id, [partition]) of a ShareAcknowledge request v0-v2 (always flexible)."""
    r = _Reader(frame, header.body_at, True)
    r.string(), r.string(), r.take(">i")            # group_id, member_id, share_session_epoch
    if header.version >= 2:
        r.take(">b")                                # is_renew_ack
    topics = []
    for _ in range(max(0, r.count())):
        topic_id, partitions = r.raw(16), []
        for _ in range(max(0, r.count())):
            partitions.append(r.take(">i"))
            for _ in range(max(0, r.count())):      # acknowledgement batches
                r.take(">q"), r.take(">q")          # first_offset, last_offset
                r.raw(max(0, r.count()))            # acknowledge_types, one int8 each
                r.tags()
            r.tags()
        r.tags()
        topics.append((topic_id, partitions))
    return topics


def _share_acknowledge_error_body(frame: bytes, header: RequestHeader, error: int) -> bytes:
    w = _Writer(True).put(">ih", 0, 0).string(None)     # throttle, no top-level error, message
    if header.version >= 2:
        w.put(">i", 0)                                  # acquisition_lock_timeout_ms: not said
    topics = _share_acknowledge_partitions(frame, header)
    w.count(len(topics))
    for topic_id, partitions in topics:
        w.raw(topic_id).count(len(partitions))
        for index in partitions:
            # the error, no message, no current leader (-1, -1)
            w.put(">ih", index, error).string(None).put(">ii", -1, -1).tags().tags()
        w.tags()
    return bytes(w.count(0).tags().out)                 # no node endpoints


# API key -> (highest version covered, body encoder)
ENCODABLE = {
    PRODUCE: (13, _produce_error_body),
    FETCH: (18, _fetch_error_body),
    SHARE_ACKNOWLEDGE: (2, _share_acknowledge_error_body),
    FIND_COORDINATOR: (6, _find_coordinator_error_body),
    END_TXN: (5, _end_txn_error_body),
    ADD_PARTITIONS_TO_TXN: (5, _add_partitions_error_body),
}


def can_encode_error(api_key: int, version: int | None = None) -> bool:
    if api_key not in ENCODABLE:
        return False
    return version is None or version <= ENCODABLE[api_key][0]


def error_response(frame: bytes, header: RequestHeader, error: int) -> bytes:
    """A whole response frame (size first) answering this request with `error`.
    Raises ValueError for a request type or version we cannot encode."""
    if not can_encode_error(header.api_key, header.version):
        raise ValueError(f"cannot encode an error response to {header.api} v{header.version}")
    body = ENCODABLE[header.api_key][1](frame, header, error)
    head = struct.pack(">i", header.correlation_id)
    if header.flexible and header.api_key != API_VERSIONS:
        head += b"\x00"                              # response header v1: no tagged fields
    data = head + body
    return struct.pack(">i", len(data)) + data
