"""The protocol proxy's relay itself: ordering, each action, counts, probability, events.
The upstream is a framing server that answers each request with its correlation id
after a pause, which is all the relay relies on; what a Kafka broker and client make of
the proxy is tested on a real cluster (tests/integration/test_protocol_proxy.py)."""
from __future__ import annotations

import socket
import struct
import threading
import time

import pytest

from clusters import protocol_proxy as pp
from clusters.kafka_requests import parse_request_header
from clusters.kafka_wire import recv_exact
from clusters.protocol_proxy import ProtocolProxy, Rule

ANSWER_PAUSE_S = 0.05


class Upstream:
    """Answers each request with [correlation id]["ok"] after ANSWER_PAUSE_S; counts them."""

    def __init__(self):
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        self.received: list[int] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            conn, _ = self.server.accept()
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn):
        try:
            while True:
                size = struct.unpack(">i", recv_exact(conn, 4))[0]
                header = parse_request_header(recv_exact(conn, size))
                self.received.append(header.correlation_id)
                time.sleep(ANSWER_PAUSE_S)
                conn.sendall(struct.pack(">ii", 6, header.correlation_id) + b"ok")
        except (ConnectionError, OSError):
            conn.close()


def produce_frame(correlation: int) -> bytes:
    """A Produce v3 request with acks=-1 and one topic, one partition, no records."""
    body = struct.pack(">h", -1) + struct.pack(">hi", -1, 1000) + struct.pack(">i", 1) + \
        struct.pack(">h", 1) + b"t" + struct.pack(">i", 1) + struct.pack(">ii", 0, 0)
    data = struct.pack(">hhi", 0, 3, correlation) + struct.pack(">h", 4) + b"test" + body
    return struct.pack(">i", len(data)) + data


def metadata_frame(correlation: int) -> bytes:
    data = struct.pack(">hhi", 3, 1, correlation) + struct.pack(">h", 4) + b"test" + \
        struct.pack(">i", -1)
    return struct.pack(">i", len(data)) + data


@pytest.fixture
def relay():
    upstream = Upstream()
    proxy = ProtocolProxy("127.0.0.1")
    port = proxy.add_route(1, ("127.0.0.1", upstream.port))
    yield proxy, port, upstream
    proxy.close()


def answers(port: int, frames: list[bytes], expect: int, timeout: float = 3.0) -> list[int]:
    """Send every frame at once; the correlation ids of the answers, in arrival order."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(b"".join(frames))
        got = []
        for _ in range(expect):
            size = struct.unpack(">i", recv_exact(s, 4))[0]
            got.append(struct.unpack(">i", recv_exact(s, size)[:4])[0])
        return got


def test_an_error_we_write_waits_behind_the_brokers_earlier_answers(relay):
    proxy, port, upstream = relay
    events = []
    proxy.set_rules("f", [Rule("r", pp.ERROR, api_keys=frozenset({0}), count=1, error_code=6)],
                    events.append)
    got = answers(port, [metadata_frame(1), produce_frame(2), metadata_frame(3)], 3)
    assert got == [1, 2, 3]                  # ours was ready first; it still comes second
    assert upstream.received == [1, 3]       # the Produce never reached the broker
    assert [(e["api"], e["correlation_id"], e["action"], e["broker"]) for e in events] == \
        [("Produce", 2, pp.ERROR, 1)]
    assert proxy.requests_seen[(1, "Produce")] == 1


def test_dropped_response_reaches_the_broker_and_never_the_client(relay):
    proxy, port, upstream = relay
    proxy.set_rules("f", [Rule("r", pp.DROP_RESPONSE, api_keys=frozenset({0}))], lambda e: None)
    assert answers(port, [produce_frame(1), metadata_frame(2)], 1) == [2]
    assert upstream.received == [1, 2]
    assert proxy.clear_rules("f") == {"r": 1}


def test_count_limits_and_clients_outside_the_prefix_pass(relay):
    proxy, port, _ = relay
    proxy.set_rules("f", [Rule("r", pp.DROP_RESPONSE, count=1),
                          Rule("other", pp.DROP_RESPONSE, client_id_prefix="someone-else")],
                    lambda e: None)
    assert answers(port, [metadata_frame(i) for i in range(1, 5)], 3) == [2, 3, 4]


@pytest.mark.parametrize("action", [pp.DELAY_REQUEST, pp.DELAY_RESPONSE])
def test_delays_hold_the_exchange(relay, action):
    proxy, port, _ = relay
    proxy.set_rules("f", [Rule("r", action, delay_ms=600)], lambda e: None)
    start = time.monotonic()
    assert answers(port, [metadata_frame(1)], 1) == [1]
    assert time.monotonic() - start >= 0.6 + ANSWER_PAUSE_S - 0.05


def test_disconnect_before_forwards_nothing(relay):
    proxy, port, upstream = relay
    proxy.set_rules("f", [Rule("r", pp.DISCONNECT_BEFORE, api_keys=frozenset({0}))], lambda e: None)
    with pytest.raises(ConnectionError):
        answers(port, [produce_frame(1)], 1)
    assert upstream.received == []


def test_disconnect_after_lets_the_broker_answer_first(relay):
    proxy, port, upstream = relay
    proxy.set_rules("f", [Rule("r", pp.DISCONNECT_AFTER, api_keys=frozenset({0}))], lambda e: None)
    with pytest.raises(ConnectionError):
        answers(port, [metadata_frame(1), produce_frame(2)], 2)
    assert upstream.received == [1, 2]


def test_probability_is_seeded(relay):
    proxy, port, _ = relay
    picked = []
    for _ in range(2):
        events = []
        proxy.set_rules("f", [Rule("r", pp.DELAY_RESPONSE, probability=0.5)], events.append, seed=7)
        answers(port, [metadata_frame(i) for i in range(20)], 20)
        proxy.clear_rules("f")
        picked.append([e["correlation_id"] for e in events])
    assert picked[0] == picked[1] and 0 < len(picked[0]) < 20


def test_a_delayed_request_lands_after_its_client_gave_up(relay):
    """What a producer's request timeout leaves behind: the client closes while we hold
    its Produce; the broker still gets it, after the delay, and answers it."""
    proxy, port, upstream = relay
    proxy.set_rules("f", [Rule("r", pp.DELAY_REQUEST, api_keys=frozenset({0}), delay_ms=300)],
                    lambda e: None)
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.sendall(produce_frame(1))
    time.sleep(0.1)
    assert upstream.received == []
    deadline = time.monotonic() + 3
    while not upstream.received and time.monotonic() < deadline:
        time.sleep(0.05)
    assert upstream.received == [1]
