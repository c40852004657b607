"""clusters.metadata_probe: a broker's Metadata v7 answer read byte by byte, and the
controller's view chosen from every broker's (the real exchange is run against Kafka
3.9 and 4.3 by the observer in every integration run)."""
from __future__ import annotations

import socket
import struct
import threading

from clusters.metadata_probe import PartitionView, _request, broker_view, elected


def _s(text: str | None) -> bytes:
    if text is None:
        return struct.pack(">h", -1)
    return struct.pack(">h", len(text)) + text.encode()


def _ints(values) -> bytes:
    return struct.pack(">i", len(values)) + b"".join(struct.pack(">i", v) for v in values)


def _response(partitions: list[tuple[int, int, int, list[int], list[int]]], error: int = 0) -> bytes:
    """A Metadata v7 response body (after the size) for one topic "t"."""
    body = struct.pack(">ii", 1, 0)                                   # correlation, throttle
    body += struct.pack(">i", 1) + struct.pack(">i", 1) + _s("10.0.0.1") + struct.pack(">i", 9092) + _s(None)
    body += _s("cluster") + struct.pack(">i", 1)                      # cluster id, controller
    body += struct.pack(">i", 1) + struct.pack(">h", error) + _s("t") + struct.pack(">b", 0)
    body += struct.pack(">i", len(partitions))
    for index, leader, epoch, replicas, isr in partitions:
        body += struct.pack(">hiii", 0, index, leader, epoch) + _ints(replicas) + _ints(isr) + _ints([])
    return body


def _serve(answer: bytes) -> tuple[int, list[bytes]]:
    """A one-shot fake broker on loopback: records the request, sends `answer`."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    got: list[bytes] = []

    def run():
        conn, _ = srv.accept()
        with conn:
            size = struct.unpack(">i", conn.recv(4))[0]
            got.append(conn.recv(size))
            conn.sendall(struct.pack(">i", len(answer)) + answer)
        srv.close()
    threading.Thread(target=run, daemon=True).start()
    return srv.getsockname()[1], got


def test_a_brokers_answer_is_read_with_each_partitions_leader_epoch():
    port, got = _serve(_response([(0, 2, 7, [1, 2, 3], [2, 3]), (1, -1, 4, [1, 2, 3], [])]))
    view = broker_view("127.0.0.1", port, ["t"])
    assert view.controller == 1
    assert view.partitions == [PartitionView("t", 0, 2, 7, (1, 2, 3), (2, 3)),
                               PartitionView("t", 1, None, 4, (1, 2, 3), ())]
    # the request: api 3 version 7, one topic, no auto-creation
    assert got[0] == _request(["t"])[4:]
    assert struct.unpack_from(">hh", got[0]) == (3, 7)


def test_a_topic_error_gives_no_partitions():
    port, _ = _serve(_response([(0, 2, 7, [1, 2, 3], [2, 3])], error=3))   # UNKNOWN_TOPIC
    assert broker_view("127.0.0.1", port, ["t"]).partitions == []


def test_the_newest_epoch_wins_over_a_deposed_leaders_own_answer():
    deposed = [PartitionView("t", 0, 1, 4, (1, 2, 3), (1, 2, 3))]     # "I still lead"
    others = [PartitionView("t", 0, 2, 5, (1, 2, 3), (2, 3))]
    assert elected([deposed, others]) == others
    assert elected([others, deposed]) == others


def test_of_the_newest_answers_the_most_common_isr_wins():
    a = PartitionView("t", 0, 2, 5, (1, 2, 3), (2, 3))
    b = PartitionView("t", 0, 2, 5, (1, 2, 3), (1, 2, 3))
    assert elected([[b], [a], [a]]) == [a]
