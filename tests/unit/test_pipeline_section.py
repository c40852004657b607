"""The pipeline family's pieces that need no cluster: an output's value (what the drain
parses), the section's defaults and facts."""
from __future__ import annotations

import pytest

from core.errors import SpecError
from families.pipelines.section import check_client, facts, pipeline
from families.workload import Workload
from workloads.records import pipeline_fields_of, pipeline_output_of, pipeline_value, record_id_of


def test_an_output_value_carries_its_input_and_count_and_is_no_record_id():
    v = pipeline_value("p0-123", 7, "pl0i1.2", 41, size=100)
    assert len(v) == 100
    assert pipeline_fields_of(v) == ("p0-123", 7)
    assert record_id_of(v) is None          # never mistaken for its input, consumed again
    assert pipeline_fields_of(pipeline_value("j3-9", None, "pl0i0", 0)) == ("j3-9", None)


def test_an_output_value_names_its_writer_and_transaction():
    assert pipeline_output_of(pipeline_value("p0-123", 7, "pl0i1.2", 41, size=100)) == (
        "p0-123", 7, "pl0i1.2", 41)
    assert pipeline_output_of(pipeline_value("j3-9", None, "pl0i0", 0)) == ("j3-9", None,
                                                                          "pl0i0", 0)
    # a value without them (cut short) still gives its input and count
    assert pipeline_output_of(b"pipe p0-1 3 ") == ("p0-1", 3, None, None)
    assert pipeline_output_of(b"p0-1 xxxx") == (None, None, None, None)


@pytest.mark.parametrize("value", [None, b"", b"p0-1 xxxx", b"pipeline p0-1 3 ", b"pipe"])
def test_anything_else_has_no_pipeline_fields(value):
    assert pipeline_fields_of(value) == (None, None)


def test_defaults_and_facts():
    p = pipeline(0, {"input_topic": "a", "output_topic": "b"})
    assert (p.name, p.group, p.processing, p.instance_names) == ("pl0", "pl0", "exactly_once",
                                                                  ["pl0i0", "pl0i1"])
    alo = pipeline(1, {"input_topic": "c", "output_topic": "d", "processing": "at_least_once"})
    assert facts(Workload(pipelines=(p,))) == {"pipelines": True, "pipeline_exactly_once": True,
                                               "pipeline_churned": False}
    assert facts(Workload(pipelines=(p, alo)))["pipeline_exactly_once"] is False
    assert facts(Workload()) == {"pipelines": False, "pipeline_exactly_once": None,
                                 "pipeline_churned": False}
    churned = pipeline(2, {"input_topic": "e", "output_topic": "f",
                           "churn": {"how": "kill", "first_s": 15}})
    assert facts(Workload(pipelines=(p, churned)))["pipeline_churned"] is True


def test_the_streams_processor_is_built_and_its_protocol_defaults_to_classic():
    p = pipeline(0, {"input_topic": "a", "output_topic": "b", "client": "streams"})
    assert (p.client, p.streams_protocol) == ("streams", "classic")
    for version in ("3.6.0", "3.9.2", "4.3.1"):
        check_client(p, version, version)


def test_the_streams_protocol_is_refused_below_4_2_naming_the_field():
    p = pipeline(0, {"input_topic": "a", "output_topic": "b", "client": "streams",
                     "streams_protocol": "streams"})
    check_client(p, "4.2.0", "4.2.0")
    check_client(p, "4.3.1", None)
    with pytest.raises(SpecError) as e:          # the clients' version
        check_client(p, "4.1.1", "4.3.1")
    assert e.value.field == "streams_protocol" and "4.1.1" in e.value.problem, e.value
    with pytest.raises(SpecError) as e:          # the brokers' version
        check_client(p, "4.3.1", "3.9.2")
    assert e.value.field == "streams_protocol" and "brokers are 3.9.2" in e.value.problem
    assert "streams_protocol: classic" in e.value.fix


def test_the_streams_protocol_belongs_to_the_streams_client_only():
    for client in ("librdkafka", "java"):
        with pytest.raises(SpecError) as e:
            pipeline(0, {"input_topic": "a", "output_topic": "b", "client": client,
                         "streams_protocol": "streams"})
        assert e.value.field == "streams_protocol" and client in e.value.problem


@pytest.mark.parametrize("key", ["processing.guarantee", "application.id", "state.dir",
                                 "group.protocol", "commit.interval.ms"])
def test_streams_settings_the_section_sets_are_refused_for_streams_only(key):
    conf = {"client_config": {key: "x"}, "input_topic": "a", "output_topic": "b"}
    assert pipeline(0, {**conf, "client": "java"}).client_config == {key: "x"}
    with pytest.raises(SpecError) as e:
        pipeline(0, {**conf, "client": "streams"})
    assert e.value.field == f"client_config.{key}" and "Streams" in e.value.problem


def test_the_java_processor_needs_send_offsets_with_the_groups_metadata():
    p = pipeline(0, {"input_topic": "a", "output_topic": "b", "client": "java"})
    for version in ("3.6.0", "4.3.1", "2.5.0"):
        check_client(p, version)
    with pytest.raises(SpecError) as e:
        check_client(p, "2.4.1")
    assert e.value.field == "client" and "KIP-447" in e.value.problem, e.value
    assert "clients_version" in e.value.fix
    check_client(pipeline(0, {"input_topic": "a", "output_topic": "b"}), "2.4.1")  # librdkafka's own


def test_java_only_settings_are_refused_for_java_only():
    conf = {"client_config": {"max.poll.records": "5"}, "input_topic": "a", "output_topic": "b"}
    assert pipeline(0, conf).client_config == {"max.poll.records": "5"}
    with pytest.raises(SpecError) as e:
        pipeline(0, {**conf, "client": "java"})
    assert e.value.field == "client_config.max.poll.records"


def test_the_transactional_ids_a_fault_can_name_are_each_exactly_once_slots():
    from types import SimpleNamespace

    from families.pipelines.clients import PipelineWorkloads
    from families.pipelines.section import transactional_id_of
    pipes = (pipeline(0, {"input_topic": "a", "output_topic": "b"}),
             pipeline(1, {"input_topic": "c", "output_topic": "d", "client": "streams"}),
             pipeline(2, {"input_topic": "e", "output_topic": "f", "processing": "at_least_once"}))
    ids, prefixes = PipelineWorkloads(SimpleNamespace(run_id="r1"),
                                      Workload(pipelines=pipes)).fault_transactional_ids()
    assert ids == {"pl0i0": transactional_id_of("r1", "pl0i0"),
                   "pl0i1": transactional_id_of("r1", "pl0i1")}
    assert prefixes == {"pl1i0": ("pl1-", 0), "pl1i1": ("pl1-", 1)}   # Streams names its own
