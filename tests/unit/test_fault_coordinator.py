"""Coordinator selectors: FindCoordinator on the wire, answered by a fake broker."""
import random
import socket
import struct
import threading

import pytest
from test_fault_fakes import FakeCluster

from clusters import coordinator as fc
from core.errors import SpecError
from faults import selectors as sel
from faults.base import FaultContext


def _read_request(conn) -> bytes:
    """One size-prefixed Kafka request, as a fake broker reads it."""
    size = struct.unpack(">i", conn.recv(4))[0]
    req = b""
    while len(req) < size:
        req += conn.recv(size - len(req))
    return req


class FakeBroker:
    """Answers FindCoordinator v1 requests with canned (error, node_id) answers, in
    turn, and keeps what it was asked (a subclass answers another version)."""

    def __init__(self, answers):
        self.answers, self.asked = list(answers), []
        self.server = socket.create_server(("127.0.0.1", 0))
        self.address = f"127.0.0.1:{self.server.getsockname()[1]}"
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while self.answers:
            conn, _ = self.server.accept()
            with conn:
                req = _read_request(conn)
                api, version, cid, n = struct.unpack_from(">hhih", req, 0)
                body = self.answer(req, api, version, cid, 10 + n)
                conn.sendall(struct.pack(">i", len(body)) + body)

    def answer(self, req: bytes, api: int, version: int, cid: int, at: int) -> bytes:
        """The response body to a request whose body starts at `at`."""
        (klen,) = struct.unpack_from(">h", req, at)
        key = req[at + 2:at + 2 + klen].decode()
        (key_type,) = struct.unpack_from(">b", req, at + 2 + klen)
        self.asked.append((api, version, key, key_type))
        error, node = self.answers.pop(0)
        host = b"10.0.0.%d" % node
        return (struct.pack(">iih", cid, 0, error) + struct.pack(">h", -1)
                + struct.pack(">i", node) + struct.pack(">h", len(host)) + host
                + struct.pack(">i", 9092))

    def close(self):
        self.server.close()


def test_find_coordinator_speaks_v1_and_retries_not_available():
    broker = FakeBroker([(15, -1), (0, 2)])          # COORDINATOR_NOT_AVAILABLE, then 2
    try:
        got = fc.find_coordinator(broker.address, "run-p0", fc.TRANSACTION, timeout_s=5)
    finally:
        broker.close()
    assert got == fc.Coordinator(2, "10.0.0.2", 9092)
    assert broker.asked == [(10, 1, "run-p0", 1), (10, 1, "run-p0", 1)]


def test_a_broker_that_refuses_for_good_is_an_error_naming_the_key():
    broker = FakeBroker([(53, -1)])                   # TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    try:
        with pytest.raises(fc.CoordinatorError, match=r"'run-p0'\) refused: .*error 53"):
            fc.find_coordinator(broker.address, "run-p0", fc.TRANSACTION, timeout_s=5)
    finally:
        broker.close()


def test_no_broker_answering_ends_at_the_deadline():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = f"127.0.0.1:{s.getsockname()[1]}"       # bound, not listening: refused
    with pytest.raises(fc.CoordinatorError, match="within 0.5 s"):
        fc.find_coordinator(dead, "g0", fc.GROUP, timeout_s=0.5)


@pytest.fixture
def ctx(tmp_path):
    return FaultContext(cluster=FakeCluster(tmp_path, brokers=3), rng=random.Random(1),
                        transactional_ids={"p0": "run-7-p0"})


def test_txn_coordinator_of_asks_for_the_producers_transactional_id(ctx, monkeypatch):
    broker = FakeBroker([(0, 3)])
    monkeypatch.setattr(ctx.cluster, "bootstrap_servers", lambda: broker.address)
    try:
        nodes = sel.parse_selector({"txn_coordinator_of": {"producer": "p0"}}, "t")(ctx)
    finally:
        broker.close()
    assert [n.name for n in nodes] == ["kafka-3"]
    assert broker.asked == [(10, 1, "run-7-p0", fc.TRANSACTION)]


def test_group_coordinator_of_asks_for_the_group(ctx):
    asked = []
    ctx.coordinator_lookup = lambda key, kind: asked.append((key, kind)) or 2
    nodes = sel.parse_selector({"group_coordinator_of": {"group": "g0"}}, "t")(ctx)
    assert [n.name for n in nodes] == ["kafka-2"] and asked == [("g0", fc.GROUP)]


def test_unknown_producer_or_absent_broker_is_a_selector_error(ctx):
    with pytest.raises(sel.SelectorError, match="producer 'p9' has no transactional.id"):
        sel.txn_coordinator_of("p9")(ctx)
    ctx.coordinator_lookup = lambda key, kind: 9
    with pytest.raises(sel.SelectorError, match="the coordinator of 'g0'"):
        sel.group_coordinator_of("g0")(ctx)


def test_bad_arguments_are_named():
    with pytest.raises(SpecError, match=r"faults\[0\].target.txn_coordinator_of.producer"):
        sel.parse_selector({"txn_coordinator_of": {}}, "faults[0].target")
    with pytest.raises(SpecError, match="unknown argument 'topic'"):
        sel.parse_selector({"group_coordinator_of": {"topic": "t"}}, "x")
    assert sel.selector_clients({"random_of": {"pool": {"txn_coordinator_of": {"producer": "p1"}}}}) \
        == [("producer", "p1")]


# -- share groups (KIP-932): FindCoordinator v6, the share key, the local computation ----

SHARE_KEY = "g:AAAAAAAAAAAAAAAAAAAAAA:0"          # 26 characters


def test_v6_request_is_flexible_and_batched_byte_for_byte():
    client = b"harness-observer"
    body = (struct.pack(">hhi", 10, 6, 7) + struct.pack(">h", len(client)) + client
            + b"\x00"                              # header v2: no tagged fields
            + b"\x02"                              # KeyType SHARE
            + b"\x02"                              # CoordinatorKeys: 1 key (compact: n + 1)
            + b"\x1b" + SHARE_KEY.encode()         # compact string: 26 + 1
            + b"\x00")                             # no tagged fields
    assert fc.encode_request_v6([SHARE_KEY], fc.SHARE, 7) == struct.pack(">i", len(body)) + body


def _v6_answer(cid: int, entries: list[tuple[str, int, int, str | None]]) -> bytes:
    """A v6 response body: header v1, throttle, Coordinators[], tags (hand-built)."""
    out = struct.pack(">i", cid) + b"\x00" + struct.pack(">i", 0) + bytes([len(entries) + 1])
    for key, node, error, message in entries:
        host = b"10.0.0.%d" % node if node >= 0 else b""
        out += bytes([len(key) + 1]) + key.encode() + struct.pack(">i", node)
        out += bytes([len(host) + 1]) + host + struct.pack(">i", 9092 if node >= 0 else -1)
        out += struct.pack(">h", error)
        out += b"\x00" if message is None else bytes([len(message) + 1]) + message.encode()
        out += b"\x01" + b"\x05" + b"\x02" + b"zz"    # one unknown tagged field (tag 5, 2 bytes)
    return out + b"\x00"


def test_v6_response_is_read_key_by_key():
    payload = _v6_answer(7, [(SHARE_KEY, 2, 0, None), ("g:x:1", -1, 15, "loading")])
    assert fc.decode_response_v6(payload, 7) == [
        (SHARE_KEY, 0, None, fc.Coordinator(2, "10.0.0.2", 9092)),
        ("g:x:1", 15, "loading", fc.Coordinator(-1, "", -1))]
    with pytest.raises(fc.CoordinatorError, match="request 7, expected 8"):
        fc.decode_response_v6(payload, 8)


class FakeShareBroker(FakeBroker):
    """Answers FindCoordinator v6 with canned (error, node_id) answers, in turn."""

    def answer(self, req: bytes, api: int, version: int, cid: int, at: int) -> bytes:
        at += 1                                                     # header tags
        key_type, count, klen = req[at], req[at + 1] - 1, req[at + 2] - 1
        key = req[at + 3:at + 3 + klen].decode()
        self.asked.append((api, version, key_type, count, key))
        error, node = self.answers.pop(0)
        return _v6_answer(cid, [(key, node, error, None)])


def test_find_coordinator_asks_v6_for_a_share_key_and_retries_not_available():
    broker = FakeShareBroker([(15, -1), (0, 3)])
    try:
        got = fc.find_coordinator(broker.address, SHARE_KEY, fc.SHARE, timeout_s=5)
    finally:
        broker.close()
    assert got == fc.Coordinator(3, "10.0.0.3", 9092)
    assert broker.asked == [(10, 6, 2, 1, SHARE_KEY)] * 2


def test_a_refused_share_key_carries_kafkas_error_code():
    broker = FakeShareBroker([(31, -1)])                # CLUSTER_AUTHORIZATION_FAILED
    try:
        with pytest.raises(fc.CoordinatorError, match="CLUSTER_AUTHORIZATION_FAILED") as e:
            fc.find_coordinator(broker.address, SHARE_KEY, fc.SHARE, timeout_s=5)
    finally:
        broker.close()
    assert e.value.error_code == 31


# Values printed by Java 17 (String.hashCode, then Kafka's Utils.abs and % n) here.
JAVA_HASHES = {
    "": 0,
    SHARE_KEY: -92982199,
    "orders-2:ASNFZ4mrze8P7cuph2VDIQ:2": -1438853925,
    "polygenelubricants": -2147483648,                   # Integer.MIN_VALUE
    "é-ü-€-𝄞:x:1": 237218549,                            # a surrogate pair counts twice
    "share-group:ZXhhbXBsZS10b3BpYy1pZA:17": 1522162229,
    "g:-_-_AAAAAAAAAAAAAAAAPg:3": -207122073,
}


def test_java_string_hash_matches_java():
    assert {k: fc.java_string_hash(k) for k in JAVA_HASHES} == JAVA_HASHES


def test_java_abs_maps_integer_min_value_to_zero():
    assert fc.java_abs(-2**31) == 0
    assert (fc.java_abs(-5), fc.java_abs(2**31 - 1), fc.java_abs(0)) == (5, 2**31 - 1, 0)


def test_share_state_partition_is_what_the_broker_computes():
    # Java: Utils.abs(key.hashCode()) % 10 and % 50
    assert [fc.share_state_partition(SHARE_KEY, n) for n in (10, 50)] == [9, 49]
    assert fc.share_state_partition("orders-2:ASNFZ4mrze8P7cuph2VDIQ:2", 50) == 25
    assert fc.share_state_partition("polygenelubricants", 7) == 0
    assert fc.share_key("orders-2", "ASNFZ4mrze8P7cuph2VDIQ", 2) == "orders-2:ASNFZ4mrze8P7cuph2VDIQ:2"


TOPIC_ID = "ASNFZ4mrze8P7cuph2VDIQ"


def _metadata(state_leaders: dict | None):
    from clusters.topic_metadata import TopicInfo
    meta = {"orders": TopicInfo("orders", TOPIC_ID, 0, {0: 1, 1: 2, 2: 3})}
    if state_leaders is not None:
        meta[fc.SHARE_STATE_TOPIC] = TopicInfo(fc.SHARE_STATE_TOPIC, "x", 0, state_leaders)
    return lambda topics: {t: meta[t] for t in topics if t in meta}


@pytest.fixture
def share_ctx(tmp_path):
    ctx = FaultContext(cluster=FakeCluster(tmp_path, brokers=3), rng=random.Random(1),
                       share_group_topics={"orders-2": ["orders"]})
    ctx.topic_metadata_lookup = _metadata({p: 1 + p % 3 for p in range(10)})
    return ctx


def _select(ctx, spec):
    ctx.begin_selection_notes()
    nodes = sel.parse_selector({"share_coordinator_of": spec}, "t")(ctx)
    return [n.name for n in nodes], ctx.end_selection_notes()


def test_share_coordinator_of_asks_findcoordinator_with_the_share_key(share_ctx):
    asked = []
    share_ctx.coordinator_lookup = lambda key, kind: asked.append((key, kind)) or 2
    names, notes = _select(share_ctx, {"group": "orders-2", "topic": "orders", "partition": 2})
    key = f"orders-2:{TOPIC_ID}:2"
    assert names == ["kafka-2"] and asked == [(key, fc.SHARE)]
    # the local computation rides along: partition 5 of 10 (Java: 1438853925 % 10), led by 3
    assert notes["share_coordinator"] == {
        "group": "orders-2", "topic": "orders", "partition": 2, "key": key,
        "state_partition": 5, "state_partition_leader": 3, "via": "FindCoordinator v6"}


def test_share_coordinator_of_defaults_to_the_groups_first_topic_and_partition_0(share_ctx):
    asked = []
    share_ctx.coordinator_lookup = lambda key, kind: asked.append(key) or 1
    assert _select(share_ctx, {"group": "orders-2"})[0] == ["kafka-1"]
    assert asked == [f"orders-2:{TOPIC_ID}:0"]


def test_a_refused_findcoordinator_falls_back_to_the_local_computation(share_ctx):
    def refuse(key, kind):
        raise fc.CoordinatorError("FindCoordinator refused: error CLUSTER_AUTHORIZATION_FAILED", 31)
    share_ctx.coordinator_lookup = refuse
    names, notes = _select(share_ctx, {"group": "orders-2", "partition": 2})
    assert names == ["kafka-3"]                         # leader of partition 5 (5 % 3 + 1)
    assert notes["share_coordinator"]["via"].startswith("local computation (FindCoordinator refused")
    assert "CLUSTER_AUTHORIZATION_FAILED" in notes["share_coordinator"]["via"]


def test_no_answer_or_no_state_topic_is_a_selector_error(share_ctx):
    def silent(key, kind):
        raise fc.CoordinatorError("no broker named the coordinator within 15 s")
    share_ctx.coordinator_lookup = silent
    with pytest.raises(sel.SelectorError, match="within 15 s"):
        _select(share_ctx, {"group": "orders-2"})

    def refuse(key, kind):
        raise fc.CoordinatorError("refused", 31)
    share_ctx.coordinator_lookup = refuse
    share_ctx.topic_metadata_lookup = _metadata(None)
    with pytest.raises(sel.SelectorError, match="__share_group_state does not exist yet"):
        _select(share_ctx, {"group": "orders-2"})


def test_unknown_share_group_topic_or_partition_is_a_selector_error(share_ctx):
    share_ctx.coordinator_lookup = lambda key, kind: 1
    with pytest.raises(sel.SelectorError, match="share group 'g9' has no topics"):
        _select(share_ctx, {"group": "g9"})
    with pytest.raises(sel.SelectorError, match="topic 'nope' is not in the cluster's metadata"):
        _select(share_ctx, {"group": "orders-2", "topic": "nope"})
    with pytest.raises(sel.SelectorError, match="has no partition 7"):
        _select(share_ctx, {"group": "orders-2", "partition": 7})


def test_the_selectors_note_lands_in_the_faults_detail(share_ctx):
    from faults.base import BaseFault

    class Touch(BaseFault):
        name = "touch"

        def _inject(self, ctx):
            self.targets = sel.share_coordinator_of("orders-2")(ctx)

        def _heal(self, ctx):
            pass
    share_ctx.coordinator_lookup = lambda key, kind: 3
    fault = Touch()
    fault.inject(share_ctx)
    assert fault.detail["share_coordinator"]["via"] == "FindCoordinator v6"
    assert [n.name for n in fault.targets] == ["kafka-3"]
    assert share_ctx.end_selection_notes() == {}        # nothing left behind for the next fault


def test_share_coordinator_of_arguments_are_checked_and_named():
    with pytest.raises(SpecError, match=r"f\.share_coordinator_of\.group: is required"):
        sel.parse_selector({"share_coordinator_of": {"topic": "t"}}, "f")
    with pytest.raises(SpecError, match=r"share_coordinator_of\.partition: must be an integer >= 0"):
        sel.parse_selector({"share_coordinator_of": {"group": "g", "partition": -1}}, "f")
    with pytest.raises(SpecError, match=r"share_coordinator_of\.topic: must be a topic name"):
        sel.parse_selector({"share_coordinator_of": {"group": "g", "topic": 3}}, "f")
    with pytest.raises(SpecError, match="unknown argument 'member'"):
        sel.parse_selector({"share_coordinator_of": {"group": "g", "member": 1}}, "f")
    with pytest.raises(SpecError, match="needs arguments"):
        sel.parse_selector("share_coordinator_of", "f")
    spec = {"share_coordinator_of": {"group": "orders-2", "topic": "orders", "partition": 2}}
    assert sel.selector_clients(spec) == [("group", "orders-2")]
    assert sel.selector_client_refs({"random_of": {"pool": spec}}) == [
        ("share_coordinator_of", "group", "orders-2")]
    assert sel.CLIENT_KINDS["share_coordinator_of"] == "share group"
    assert sel.selector_refs(spec) == [("orders", 2)]
    assert sel.selector_refs({"share_coordinator_of": {"group": "orders-2"}}) == []


# -- ListTransactions (a Streams pipeline's transactional ids) ---------------------------

def _list_txn_response(cid: int, error: int, states: list[tuple[str, int, str]]) -> bytes:
    """A ListTransactions v0 response as Kafka writes it (header v1, flexible body)."""
    body = struct.pack(">i", cid) + b"\x00" + struct.pack(">ih", 0, error) + b"\x01"
    body += fc.uvarint(len(states) + 1)
    for txn_id, pid, state in states:
        body += fc.compact_string(txn_id) + struct.pack(">q", pid) + fc.compact_string(state) + b"\x00"
    return body + b"\x00"


class FakeListBroker:
    """Answers one ListTransactions v0 request with canned states; keeps the request."""

    def __init__(self, states, error=0):
        self.states, self.error, self.asked = states, error, []
        self.server = socket.create_server(("127.0.0.1", 0))
        self.address = f"127.0.0.1:{self.server.getsockname()[1]}"
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        conn, _ = self.server.accept()
        with conn:
            req = _read_request(conn)
            api, version, cid = struct.unpack_from(">hhi", req, 0)
            self.asked.append((api, version, req[-3:]))
            body = _list_txn_response(cid, self.error, self.states)
            conn.sendall(struct.pack(">i", len(body)) + body)

    def close(self):
        self.server.close()


def test_list_transactions_asks_every_broker_v0_unfiltered_and_merges_their_ids():
    a = FakeListBroker([("pl0-b9-1", 7, "Ongoing"), ("run-p0", 3, "Empty")])
    b = FakeListBroker([("pl0-a1-1", 8, "CompleteCommit")], error=0)
    dead = socket.create_server(("127.0.0.1", 0))
    dead_address = f"127.0.0.1:{dead.getsockname()[1]}"
    dead.close()
    try:
        ids, missing = fc.list_transactions(f"{a.address},{b.address},{dead_address}", timeout_s=2)
    finally:
        a.close()
        b.close()
    assert ids == ["pl0-a1-1", "pl0-b9-1", "run-p0"]
    assert len(missing) == 1 and missing[0].startswith(dead_address)
    # api 66 v0; no state filter, no producer id filter (empty compact arrays), no tags
    assert a.asked == [(66, 0, b"\x01\x01\x00")]


def test_a_refusing_broker_is_named_among_the_missing():
    a = FakeListBroker([], error=31)                 # CLUSTER_AUTHORIZATION_FAILED
    try:
        ids, missing = fc.list_transactions(a.address, timeout_s=2)
    finally:
        a.close()
    assert ids == [] and missing == [f"{a.address}: error CLUSTER_AUTHORIZATION_FAILED"]


def test_txn_coordinator_of_a_streams_slot_takes_its_numbered_listed_id(ctx):
    ctx.transactional_id_prefixes = {"pl0i0": ("pl0-", 0), "pl0i1": ("pl0-", 1)}
    ctx.transactions_lookup = lambda: (["other-x", "pl0-a-1", "pl0-b-1"], [])
    asked = []
    ctx.coordinator_lookup = lambda key, kind: asked.append((key, kind)) or 2
    assert [n.name for n in sel.txn_coordinator_of("pl0i1")(ctx)] == ["kafka-2"]
    assert asked == [("pl0-b-1", fc.TRANSACTION)]
    ctx.transactions_lookup = lambda: (["pl0-a-1"], ["10.0.0.3:9092: down"])
    sel.txn_coordinator_of("pl0i1")(ctx)            # one id listed: slot 1 takes it too
    assert asked[-1] == ("pl0-a-1", fc.TRANSACTION)
    ctx.transactions_lookup = lambda: (["other-x"], ["10.0.0.3:9092: down"])
    with pytest.raises(sel.SelectorError, match=r"no broker lists a transactional id starting 'pl0-'.*down"):
        sel.txn_coordinator_of("pl0i0")(ctx)
