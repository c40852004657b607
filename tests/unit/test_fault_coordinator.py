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


class FakeBroker:
    """Answers FindCoordinator v1 requests with canned (error, node_id) answers, in
    turn, and keeps what it was asked."""

    def __init__(self, answers):
        self.answers = list(answers)
        self.asked: list[tuple] = []
        self.server = socket.create_server(("127.0.0.1", 0))
        self.address = f"127.0.0.1:{self.server.getsockname()[1]}"
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while self.answers:
            conn, _ = self.server.accept()
            with conn:
                size = struct.unpack(">i", conn.recv(4))[0]
                req = b""
                while len(req) < size:
                    req += conn.recv(size - len(req))
                api, version, cid, n = struct.unpack_from(">hhih", req, 0)
                at = 10 + n
                (klen,) = struct.unpack_from(">h", req, at)
                key = req[at + 2:at + 2 + klen].decode()
                (key_type,) = struct.unpack_from(">b", req, at + 2 + klen)
                self.asked.append((api, version, key, key_type))
                error, node = self.answers.pop(0)
                host = b"10.0.0.%d" % node
                body = (struct.pack(">iih", cid, 0, error) + struct.pack(">h", -1)
                        + struct.pack(">i", node) + struct.pack(">h", len(host)) + host
                        + struct.pack(">i", 9092))
                conn.sendall(struct.pack(">i", len(body)) + body)

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
