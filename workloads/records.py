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


# A compacted topic's tombstone has a null value: its record_id travels in this header
# (families/compacted). Whether a seq is a tombstone is a function of the producer's
# seed and the seq alone, so the reconciler of a killed producer rebuilds it.
RECORD_ID_HEADER = "harness.record_id"
_TOMBSTONE_MOD = 1_000_003


def is_tombstone(seq: int, rate: float | None, seed: int) -> bool:
    """Whether a compacted writer's seq is a tombstone (rate 0..1; None: never)."""
    if not rate:
        return False
    return ((seq * 2654435761 + seed * 40503 + 12345) % _TOMBSTONE_MOD) < rate * _TOMBSTONE_MOD


def record_id_of_headers(headers) -> str | None:
    """record_id carried by a tombstone's header, or None."""
    for k, v in headers or ():
        if k == RECORD_ID_HEADER and v:
            return v.decode(errors="replace")
    return None


def seq_of_record_id(record_id: str) -> int:
    return int(record_id.rsplit("-", 1)[1])


# A pipeline's output (workloads/pipeline_processor.py): "pipe <source record_id>
# <key_count or -> <instance> <txn> " padded. Its head is not a record_id (no
# "-<digits>"), so the records family counts it as a payload it did not write
# (consumed_foreign) and never mistakes it for its input record.
PIPE_HEAD = b"pipe"


def pipeline_value(source_record_id: str, key_count: int | None, instance: str, txn: int,
                   size: int = 0) -> bytes:
    head = b"%b %b %b %b %d " % (PIPE_HEAD, source_record_id.encode(),
                                 b"-" if key_count is None else b"%d" % key_count,
                                 instance.encode(), txn)
    return head + b"x" * max(0, size - len(head))


def pipeline_fields_of(value: bytes | None) -> tuple[str | None, int | None]:
    """(source_record_id, key_count) of a pipeline output; (None, None) for anything else."""
    return pipeline_output_of(value)[:2]


def pipeline_output_of(value: bytes | None
                       ) -> tuple[str | None, int | None, str | None, int | None]:
    """(source_record_id, key_count, instance, txn) of a pipeline output (instance and
    txn None when the value does not carry them); all None for anything else."""
    if not value or not value.startswith(PIPE_HEAD + b" "):
        return None, None, None, None
    parts = value.split(b" ", 5)
    if len(parts) < 4:
        return None, None, None, None
    count = None if parts[2] == b"-" else int(parts[2]) if parts[2].isdigit() else None
    instance = parts[3].decode(errors="replace") if len(parts) > 5 else None
    txn = int(parts[4]) if instance is not None and parts[4].isdigit() else None
    return parts[1].decode(errors="replace"), count, instance, txn
