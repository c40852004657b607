"""Workload specs: frozen, validated, and bad fields named with their fix.

Build them with `ProducerSpec.parse({...})` (or the constructor); either way a
bad field raises core.errors.SpecError("producer.acks", problem, fix).
"""
from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from core.errors import SpecError

NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_.]*$")

# Fixes for the fields a user is most likely to get wrong.
_FIXES: dict[str, str] = {
    "acks": "use 0, 1 or 'all'",
    "compression": "use one of none, gzip, snappy, lz4, zstd",
    "keys": "use 'none', 'fixed' (keys k0..k{key_count-1}) or 'per_key' (fixed keys, per-key sequence in the value)",
    "assignment": "use 'eager' (range), 'range', 'roundrobin' or 'cooperative-sticky'",
    "commit": "use 'auto' (enable.auto.commit) or 'after-processing' (commit what was recorded)",
    "isolation": "use 'read_committed' or 'read_uncommitted'",
    "group_protocol": "use 'classic' (client-side assignment) or 'consumer' (KIP-848, Kafka 4.0+)",
    "name": "use a letter followed by letters, digits, '_' or '.' (no '-': it separates name and seq in record_id)",
}


def idempotent_by_default(acks: Any) -> bool:
    """Kafka's own client: idempotence is on by default, and quietly off when acks is not
    all (a producer asked for both is refused: ProducerSpec's own check)."""
    return str(acks) in ("all", "-1")


class _Spec(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    _section: str = "workload"

    @classmethod
    def parse(cls, data: dict[str, Any] | None = None, **kw: Any):
        return cls(**{**(data or {}), **kw})

    def __init__(self, **data: Any):
        try:
            super().__init__(**data)
        except ValidationError as e:
            err = e.errors()[0]
            loc = ".".join(str(p) for p in err["loc"]) or "(spec)"
            first = str(err["loc"][0]) if err["loc"] else ""
            fix = _FIXES.get(first)
            if err["type"] == "extra_forbidden":
                fix = f"remove it; known fields: {', '.join(sorted(type(self).model_fields))}"
            problem = err["msg"]
            if "input" in err and err["type"] != "missing" and err["loc"]:
                problem += f" (got {err['input']!r})"
            raise SpecError(f"{self._section_name()}.{loc}", problem, fix) from None

    @classmethod
    def _section_name(cls) -> str:
        return cls.__private_attributes__["_section"].default


def named(v: str, field: str = "name") -> str:
    """A workload item's name, refused with the field and its fix (a family section's
    validator calls this: one rule for every family's names)."""
    if not NAME_RE.match(v):
        raise SpecError(field, f"bad name {v!r}", "use a letter followed by letters, digits, '_' or '.'")
    return v


def fraction(v: float, field: str, example: str = "") -> float:
    """A rate from 0 to 1, refused with the field and its fix."""
    if not 0 <= v <= 1:
        raise SpecError(field, f"{v:g} is {'above 1' if v > 1 else 'below 0'}",
                        f"use a fraction from 0 to 1{example}")
    return v


def written_by_a_producer(i: int, field: str, topic: str, producers, why: str,
                          fix: str) -> list[tuple[int, str, str, str]]:
    """The refusal of item i's `field` when a producer of workload.producers writes its
    topic too (a family's cross-section rule; `why`: what would go wrong), else []."""
    if any(p.topic == topic for p in producers):
        return [(i, field, f"a producer of workload.producers writes {topic!r} too: {why}", fix)]
    return []


def topics_read_by_group(workload) -> dict[str, set[str]]:
    """Each consumer group id of a workload section (its consumer groups and Kafka's Java
    consumers) with the topics it reads."""
    readers: dict[str, set[str]] = {}
    for g in getattr(workload, "consumers", ()):
        readers.setdefault(g.group_id, set()).update(g.topics)
    for c in getattr(workload, "java_consumers", ()):
        readers.setdefault(c.group_id, set()).add(c.topic)
    return readers


def _check_name(v: str) -> str:
    if not NAME_RE.match(v):
        raise ValueError(f"bad name {v!r}")
    return v


class TransactionSpec(_Spec):
    """Transactional mode of a producer."""
    _section: str = "producer.transactions"
    records_per_txn: int = 100
    abort_rate: float = 0.0            # fraction of transactions aborted on purpose
    transactional_id: str | None = None  # default: "<run_id>-<producer>"
    transaction_timeout_ms: int = 60000
    # Consume-transform-produce: read this topic in `input_group`, write one
    # output record per input record, commit input offsets inside the txn.
    input_topic: str | None = None
    input_group: str | None = None
    # Jepsen's knobs. Each transaction writes this many of the topic's partitions (a
    # seeded choice, records in turn); None: the partitioner's choice.
    partitions_per_txn: int | None = None
    # Up to this long (uniform, seeded) between two sends of a transaction and before
    # its end: a transaction stays open while faults happen.
    intra_txn_delay_ms: int = 0
    # An indefinite error (a commit, abort or offsets call that times out or keeps
    # failing retriably; with `reinit`, also a record whose delivery timed out): `keep`
    # the producer and retry the call until it answers, as most applications do, or
    # `reinit`: record the transaction's outcome as unknown, close the producer and make
    # a new one with the same transactional.id (init_transactions bumps the epoch and
    # fences whatever is still in flight): the mitigation Jepsen suggested.
    on_indefinite: Literal["keep", "reinit"] = "keep"
    end_timeout_ms: int = 30000           # one commit/abort/offsets call waits this long

    @field_validator("records_per_txn", "partitions_per_txn", "end_timeout_ms")
    @classmethod
    def _positive(cls, v: int | None) -> int | None:
        if v is not None and v < 1:
            raise ValueError("must be at least 1")
        return v

    @field_validator("intra_txn_delay_ms")
    @classmethod
    def _delay(cls, v: int) -> int:
        if v < 0:
            raise ValueError("must not be negative")
        return v

    @field_validator("abort_rate")
    @classmethod
    def _rate(cls, v: float) -> float:
        if not 0.0 <= v <= 1.0:
            raise ValueError("must be between 0.0 and 1.0")
        return v

    @model_validator(mode="after")
    def _ctp(self):
        if self.input_topic and not self.input_group:
            raise SpecError("producer.transactions.input_group", "input_topic needs a consumer group",
                            "set input_group for the consume-transform-produce loop")
        return self


def _positive_seconds(v: float) -> float:
    if v <= 0:
        raise ValueError("must be positive")
    return v


class ChurnSpec(_Spec):
    """Clients leaving and coming back while the workload runs: every `every_s` the
    next consumer-group member (round-robin), or the producer, is closed cleanly (a
    member leaves its group; a producer waits for its outstanding outcomes) or killed
    (SIGKILL: nothing flushed or committed), stays away `down_s`, and a new
    incarnation starts. The workload's own behaviour, recorded as `client` events;
    not a cluster fault."""
    _section: str = "consumer.churn"
    every_s: float = 10.0
    how: Literal["clean", "kill"] = "clean"
    down_s: float = Field(2.0, ge=0)
    # the first one this long after the group starts (a share group: after its first
    # record; workloads/churn.py)
    first_s: float = 10.0

    _positive = field_validator("every_s", "first_s")(classmethod(lambda cls, v: _positive_seconds(v)))


class ProducerChurnSpec(ChurnSpec):
    """A restarted producer is a new producer named `<name>.<n>` (history spec: a
    restarted producer gets a new name), with the same transactional.id: it fences
    the killed one and aborts the transaction it left open."""
    _section: str = "producer.churn"


class ProducerSpec(_Spec):
    """One producer instance (its own process). `name` is its record_id prefix."""
    _section: str = "producer"
    name: str = "p0"
    topic: str
    acks: Literal["0", "1", "all"] = "all"
    enable_idempotence: bool = True
    retries: int | None = None                 # None: client default (effectively infinite)
    max_in_flight: int = 5
    linger_ms: int = 5
    batch_size: int | None = None
    compression: Literal["none", "gzip", "snappy", "lz4", "zstd"] = "none"
    delivery_timeout_ms: int = 120000
    request_timeout_ms: int = 30000
    keys: Literal["none", "fixed", "per_key"] = "none"
    key_count: int = 16
    record_size: int = 100                     # value bytes (at least the record_id prefix)
    rate: float | None = None                  # records/s; None = unthrottled
    records: int | None = None                 # stop after this many sends
    duration_s: float | None = None            # or after this long
    transactions: TransactionSpec | None = None
    churn: ProducerChurnSpec | None = None     # restarted while it runs
    client_config: dict[str, str] = {}         # extra librdkafka settings, passed through
    seed: int = 0
    # a compacted topic's writer (families/compacted): this fraction of its writes are
    # tombstones, and each row records its key's version and whether it is one; None:
    # an ordinary producer (both columns null)
    tombstone_rate: float | None = Field(None, ge=0, le=1)
    # A fatal client error (the client says the producer cannot go on): `stop` (the
    # workload dies: workload_deaths counts it) or `restart`: a new incarnation `p0.1`
    # with the same transactional.id, as churn starts one. Either way a `client-fatal`
    # event says when and why.
    on_fatal: Literal["stop", "restart"] = "stop"
    # `java`: Kafka's own Java producer (workloads/java_txn.py: transactional only), its
    # jars of workload.clients_version (default: the brokers'), in a container.
    client: Literal["librdkafka", "java"] = "librdkafka"

    @field_validator("acks", mode="before")
    @classmethod
    def _acks(cls, v: Any) -> Any:
        if v in (-1, "-1"):
            return "all"
        return str(v) if isinstance(v, int) and not isinstance(v, bool) else v

    _name = field_validator("name")(classmethod(lambda cls, v: _check_name(v)))

    @field_validator("max_in_flight", "key_count", "record_size", "delivery_timeout_ms",
                     "request_timeout_ms")
    @classmethod
    def _positive(cls, v: int) -> int:
        if v < 1:
            raise ValueError("must be at least 1")
        return v

    @field_validator("linger_ms", "retries", "batch_size")
    @classmethod
    def _non_negative(cls, v: int | None) -> int | None:
        if v is not None and v < 0:
            raise ValueError("must not be negative")
        return v

    @field_validator("rate", "duration_s")
    @classmethod
    def _positive_float(cls, v: float | None) -> float | None:
        if v is not None and v <= 0:
            raise ValueError("must be positive (leave it unset for 'unthrottled'/'no limit')")
        return v

    @field_validator("records")
    @classmethod
    def _records(cls, v: int | None) -> int | None:
        if v is not None and v < 0:
            raise ValueError("must not be negative")
        return v

    @model_validator(mode="after")
    def _consistent(self):
        # SpecError passes through pydantic unchanged, so each rule names its field.
        if self.records is None and self.duration_s is None and (
                self.transactions is None or self.transactions.input_topic is None):
            raise SpecError("producer.records", "neither records nor duration_s is set",
                            "set records or duration_s so the producer ends")
        if self.enable_idempotence and self.acks != "all":
            raise SpecError("producer.enable_idempotence", f"needs acks='all', got acks={self.acks!r}",
                            "set acks: all, or enable_idempotence: false")
        if self.enable_idempotence and self.max_in_flight > 5:
            raise SpecError("producer.max_in_flight", f"{self.max_in_flight} > 5 with idempotence",
                            "use max_in_flight <= 5 or enable_idempotence: false")
        if self.transactions is not None and not self.enable_idempotence:
            raise SpecError("producer.transactions", "transactions need an idempotent producer",
                            "set enable_idempotence: true")
        if self.client == "java":
            _java_fits(self)
        if self.delivery_timeout_ms < self.request_timeout_ms + self.linger_ms:
            raise SpecError("producer.delivery_timeout_ms",
                            f"{self.delivery_timeout_ms} < request_timeout_ms + linger_ms "
                            f"({self.request_timeout_ms + self.linger_ms})",
                            "raise delivery_timeout_ms or lower request_timeout_ms")
        return self


def txn_id_of(spec: ProducerSpec, run_id: str) -> str | None:
    """A transactional producer's transactional.id: its own, or `<run_id>-<name>`."""
    t = spec.transactions
    if t is None:
        return None
    return t.transactional_id or f"{run_id}-{spec.name}"


def _java_fits(spec: ProducerSpec) -> None:
    """What the Java transactional producer does not do (workloads/java_txn.py)."""
    if spec.transactions is None:
        raise SpecError("producer.client", "the java client here is the transactional producer",
                        "add transactions: {...}, or use workload.java_producers "
                        "(Kafka's VerifiableProducer) for plain Java load")
    for field, bad, fix in (
            ("transactions.input_topic", spec.transactions.input_topic is not None,
             "remove it: consume-transform-produce is librdkafka's only"),
            ("churn", spec.churn is not None, "remove it, or use client: librdkafka"),
            ("keys", spec.keys != "none", "use keys: none with client: java")):
        if bad:
            raise SpecError(f"producer.{field}", "not supported with client: java", fix)


class ConsumerGroupSpec(_Spec):
    """A consumer group of `members` processes named <name_prefix>0..M-1."""
    _section: str = "consumer"
    group_id: str
    topics: tuple[str, ...]
    members: int = 1
    name_prefix: str = "c"
    assignment: Literal["eager", "range", "roundrobin", "cooperative-sticky"] = "eager"
    # KIP-848 (GA in Kafka 4.0): `consumer` lets the broker assign partitions and keep the
    # session, so `assignment` and `session_timeout_ms` do not apply.
    group_protocol: Literal["classic", "consumer"] = "classic"
    commit: Literal["auto", "after-processing"] = "after-processing"
    auto_commit_interval_ms: int = 1000
    commit_interval_ms: int = 1000            # after-processing: commit at most this often
    isolation: Literal["read_committed", "read_uncommitted"] = "read_uncommitted"
    static_membership: bool = False
    session_timeout_ms: int = 10000
    max_poll_interval_ms: int = 300000
    auto_offset_reset: Literal["earliest", "latest"] = "earliest"
    # How often a member flushes its history rows (after-processing also flushes
    # before every commit). A longer interval widens what a hard kill loses.
    history_flush_s: float = 1.0
    churn: ChurnSpec | None = None
    client_config: dict[str, str] = {}

    _prefix = field_validator("name_prefix")(classmethod(lambda cls, v: _check_name(v)))

    @field_validator("topics", mode="before")
    @classmethod
    def _topics(cls, v: Any) -> Any:
        if isinstance(v, str):
            v = (v,)
        if not v:
            raise ValueError("needs at least one topic")
        return tuple(v)

    @field_validator("members", "auto_commit_interval_ms", "commit_interval_ms",
                     "session_timeout_ms", "max_poll_interval_ms")
    @classmethod
    def _positive(cls, v: int) -> int:
        if v < 1:
            raise ValueError("must be at least 1")
        return v

    _flush = field_validator("history_flush_s")(classmethod(lambda cls, v: _positive_seconds(v)))

    @property
    def member_names(self) -> list[str]:
        return [f"{self.name_prefix}{i}" for i in range(self.members)]


class DrainSpec(_Spec):
    """The final read of every partition, earliest to the high watermark at drain start."""
    _section: str = "drain"
    topics: tuple[str, ...]
    isolation: Literal["read_committed", "read_uncommitted"] = "read_uncommitted"
    timeout_s: float = 120.0                  # hard bound on the whole drain
    stall_s: float = 30.0                     # give up when no partition advanced this long
    client_config: dict[str, str] = {}

    @field_validator("topics", mode="before")
    @classmethod
    def _topics(cls, v: Any) -> Any:
        return ConsumerGroupSpec._topics(v)

    _positive = field_validator("timeout_s", "stall_s")(classmethod(lambda cls, v: _positive_seconds(v)))
