"""What a harness record looks like on the wire, and how any consumer names it.

The value starts with the record_id and a space: b"p0-123 xxxx..." padded to
`record_size` bytes (per_key mode adds "k3:41 ", the key and its own
sequence). Kafka's Java VerifiableProducer writes "<prefix>.<counter>" when
run with --value-prefix; we give each Java producer an integer prefix N and
call it producer "j<N>", so its value "7.123" is record_id "j7-123" (its
counter is its send order, which is what our seq is). No headers: the value
prefix is enough for every consumer, including the Java VerifiableConsumer,
which prints only key and value.
"""
from __future__ import annotations

import re

_OURS = re.compile(rb"^[A-Za-z][A-Za-z0-9_.]*-\d+$")
_JAVA = re.compile(rb"^(\d+)\.(\d+)$")


def java_producer_name(prefix: int) -> str:
    return f"j{prefix}"


def key_for(keys: str, key_count: int, seq: int) -> str | None:
    """Deterministic key of a seq, so a supervisor can rebuild it after a crash."""
    if keys == "none":
        return None
    return f"k{seq % key_count}"


class ValueMaker:
    """Builds record values fast (this is on the producer's hot path)."""

    def __init__(self, producer: str, record_size: int, keys: str = "none", key_count: int = 1):
        self._name = producer.encode()
        self._pad = b"x" * record_size
        self._per_key = keys == "per_key"
        self._key_count = key_count

    def __call__(self, seq: int) -> bytes:
        if self._per_key:
            head = b"%b-%d k%d:%d " % (self._name, seq, seq % self._key_count, seq // self._key_count)
        else:
            head = b"%b-%d " % (self._name, seq)
        return head + self._pad[len(head):]


def seq_of_value(value: bytes, name_len: int) -> int:
    """Seq of one of our own values, given len(producer name) (delivery-report path)."""
    return int(value[name_len + 1:value.index(b" ", name_len + 1)])


def record_id_of(value: bytes | None) -> str | None:
    """record_id carried by a value, or None if the harness did not write it."""
    if not value:
        return None
    head = value.split(b" ", 1)[0]
    if _OURS.match(head):
        return head.decode()
    m = _JAVA.match(head)
    if m:
        return f"{java_producer_name(int(m.group(1)))}-{int(m.group(2))}"
    return None
