"""Workload specs: defaults, normalisation, and errors that name the field and the fix."""
import pytest
from pydantic import ValidationError

from core.errors import SpecError
from workloads.spec import ConsumerGroupSpec, DrainSpec, ProducerSpec, TransactionSpec


def test_defaults_and_acks_normalisation():
    p = ProducerSpec(topic="t", records=10)
    assert (p.acks, p.enable_idempotence, p.record_size, p.name) == ("all", True, 100, "p0")
    assert ProducerSpec(topic="t", records=1, acks=-1).acks == "all"
    assert ProducerSpec(topic="t", records=1, acks=0, enable_idempotence=False).acks == "0"


def test_specs_are_frozen():
    p = ProducerSpec(topic="t", records=10)
    with pytest.raises(ValidationError):
        p.records = 5


@pytest.mark.parametrize("bad, field, fix_word", [
    ({"acks": 2}, "producer.acks", "'all'"),
    ({"compression": "brotli"}, "producer.compression", "zstd"),
    ({"name": "p-0"}, "producer.name", "'-'"),
    ({"bogus": 1}, "producer.bogus", "remove it"),
    ({"record_size": 0}, "producer.record_size", None),
    ({"acks": 1}, "producer.enable_idempotence", "acks: all"),
    ({"max_in_flight": 6}, "producer.max_in_flight", "<= 5"),
    ({"rate": -5}, "producer.rate", None),
    ({"transactions": {"abort_rate": 1.5}}, "producer.transactions.abort_rate", None),
    ({"transactions": {"input_topic": "in"}}, "producer.transactions.input_group", "input_group"),
    ({"enable_idempotence": False, "acks": 1, "transactions": {}}, "producer.transactions",
     "enable_idempotence"),
    ({"delivery_timeout_ms": 1000}, "producer.delivery_timeout_ms", "raise"),
    ({"churn": {"every_s": 0}}, "producer.churn.every_s", None),
    ({"churn": {"how": "pause"}}, "producer.churn.how", None),
])
def test_bad_producer_fields(bad, field, fix_word):
    with pytest.raises(SpecError) as ei:
        ProducerSpec.parse({"topic": "t", "records": 10, **bad})
    assert ei.value.field == field
    if fix_word:
        assert "fix:" in str(ei.value) and fix_word in str(ei.value)


def test_producer_needs_an_end():
    with pytest.raises(SpecError) as ei:
        ProducerSpec(topic="t")
    assert ei.value.field == "producer.records"
    ProducerSpec(topic="t", duration_s=3)
    ProducerSpec(topic="t", transactions={"input_topic": "in", "input_group": "g"})


def test_missing_topic_is_named():
    with pytest.raises(SpecError) as ei:
        ProducerSpec(records=1)
    assert ei.value.field == "producer.topic"


def test_consumer_group_spec():
    c = ConsumerGroupSpec(group_id="g", topics="t", members=3)
    assert c.topics == ("t",) and c.member_names == ["c0", "c1", "c2"]
    for bad, field in [({"topics": []}, "consumer.topics"), ({"members": 0}, "consumer.members"),
                       ({"assignment": "sticky"}, "consumer.assignment"),
                       ({"commit": "sometimes"}, "consumer.commit"),
                       ({"isolation": "committed"}, "consumer.isolation")]:
        with pytest.raises(SpecError) as ei:
            ConsumerGroupSpec.parse({"group_id": "g", "topics": ["t"], **bad})
        assert ei.value.field == field


def test_drain_and_transaction_specs():
    assert DrainSpec(topics="t").topics == ("t",)
    with pytest.raises(SpecError) as ei:
        DrainSpec(topics="t", timeout_s=0)
    assert ei.value.field == "drain.timeout_s"
    with pytest.raises(SpecError) as ei:
        TransactionSpec(records_per_txn=0)
    assert ei.value.field == "producer.transactions.records_per_txn"


def test_spec_roundtrips_through_json():
    p = ProducerSpec(topic="t", records=10, transactions={"records_per_txn": 7, "abort_rate": 0.2})
    assert ProducerSpec.model_validate_json(p.model_dump_json()) == p
