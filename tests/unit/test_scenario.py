"""The scenario model: built-ins validate, the resolved document loads back the same,
--set and --seed, facts from the model, the seeded fault plan; the teardown stack and
the phase records the runner relies on."""
from __future__ import annotations

import json

import pytest
import yaml

from core.context import Finalizers as Teardown
from core.errors import SpecError
from harness.run.fault_timeline import plan_faults
from harness.run.phases import PhaseLog, interruption
from harness.scenario import builtin_names, load_scenario, parse_scenario
from harness.scenario.yamlsource import Source


@pytest.mark.parametrize("name", builtin_names())
def test_every_builtin_scenario_validates_and_round_trips(name):
    s = load_scenario(name)
    again = parse_scenario(yaml.safe_load(s.to_yaml()), Source("resolved"))
    assert again.to_dict() == s.to_dict()
    assert list(s.to_dict())[:4] == ["name", "description", "seed", "cluster"]


def test_default_is_durable_and_has_two_leader_faults():
    s = load_scenario(None)
    assert s.name == "default" and s.facts["durable"] and s.facts["idempotent"]
    assert [e.fault for e in s.faults.timeline] == ["kill", "partition"]
    assert s.cluster.kafka.version.startswith("3.9") and s.topics[0].configs["min.insync.replicas"] == "2"
    assert s.drain.topics == ("t",) and s.workload.producers[0].duration_s == 60


def test_set_overrides_fields_config_keys_and_every_producer():
    s = load_scenario("quick", ("producer.acks=1", "cluster.brokers=4",
                                "topics[0].configs.retention.ms=60000", "workload.duration_s=30"),
                      seed=9)
    p = s.workload.producers[0]
    assert p.acks == "1" and p.enable_idempotence is False       # Kafka's client does the same
    assert s.cluster.brokers == 4 and s.topics[0].configs["retention.ms"] == "60000"
    assert s.seed == 9 and p.seed == 9 and p.duration_s == 30    # follows workload.duration_s
    assert s.facts["acks_all"] is False and s.facts["durable"] is False


@pytest.mark.parametrize("name", ["default", "leader-isolation"])
def test_set_acks_1_on_a_file_that_says_idempotent_means_that_producer_with_acks_1(name):
    """The README's `--set producer.acks=1`: the file's `enable_idempotence: true` gives
    way, as Kafka's client turns idempotence off for acks=1; given by --set too, the
    conflict is the user's own and is refused."""
    p = load_scenario(name, ("producer.acks=1",)).workload.producers[0]
    assert (p.acks, p.enable_idempotence) == ("1", False)
    with pytest.raises(SpecError, match=r"--set producer.enable_idempotence=true: .*needs acks='all'"):
        load_scenario(name, ("producer.acks=1", "producer.enable_idempotence=true"))


def test_set_errors_name_the_override_and_the_closest_field():
    with pytest.raises(SpecError, match=r"--set cluster\.brokerz: unknown field .*did you mean 'brokers'"):
        load_scenario("quick", ("cluster.brokerz=3",))
    with pytest.raises(SpecError, match=r"--set cluster\.brokers=9: cluster\.brokers"):
        load_scenario("quick", ("cluster.brokers=9",))
    with pytest.raises(SpecError, match="no '='"):
        load_scenario("quick", ("cluster.brokers",))


def test_unknown_scenario_name_suggests_a_builtin():
    with pytest.raises(SpecError, match="did you mean 'quick'"):
        load_scenario("quik")


def test_nemesis_plan_is_the_same_for_the_same_seed_and_differs_for_another():
    doc = {"topics": [{"name": "t"}], "workload": {"duration_s": 120, "producers": [{}]},
           "faults": {"nemesis": {"presets": ["kill-leader", "pause-leader", "partition-leader"],
                                  "fault_min_s": 2, "fault_max_s": 5,
                                  "recovery_min_s": 5, "recovery_max_s": 10}}}
    s = parse_scenario(doc, Source("x"))

    def plan(seed):
        return [(p.label, p.at_s, p.hold_s) for p in plan_faults(s, seed)]
    assert plan(3) == plan(3) and len(plan(3)) >= 5
    assert plan(3) != plan(4)
    assert all(label.startswith("nemesis[") for label, _, _ in plan(3))


def test_teardown_runs_every_finalizer_newest_first_even_when_one_fails():
    done = []
    t = Teardown()
    t.push("cluster-stop", lambda: done.append("cluster"))
    t.push("workloads-stop", lambda: 1 / 0)
    t.push("heal-all", lambda: done.append("heal"))
    t.run("heal-all")                                # a phase ran it early: not again
    with pytest.raises(ZeroDivisionError):
        t.run("workloads-stop")                      # failed half-way: close() runs it again
    errors = t.close()
    assert done == ["heal", "cluster"]
    assert list(errors) == ["workloads-stop"] and "ZeroDivisionError" in errors["workloads-stop"]
    assert t.pending() == []


def test_phase_records_and_interruption(tmp_path):
    log = PhaseLog(tmp_path, None)
    with log.phase("cluster-up") as detail:
        detail["nodes"] = 3
    with pytest.raises(KeyboardInterrupt), log.phase("faults"):
        raise KeyboardInterrupt
    records = json.loads((tmp_path / "phases.json").read_text())
    assert [(r["name"], r["outcome"]) for r in records] == [("cluster-up", "ok"),
                                                            ("faults", "interrupted")]
    assert records[0]["detail"] == {"nodes": 3} and records[1]["end_us"] >= records[1]["start_us"]
    assert interruption(tmp_path).startswith("interrupted in phase faults")
    with log.phase("drain"):
        pass
    assert interruption(tmp_path) is None           # a complete drain: judge it


def test_a_drain_that_read_less_than_all_is_judged_as_its_run_judged_it(tmp_path):
    """MirrorMaker 2 not caught up, or a share drain incomplete: the phase ends failed
    with no error, the run goes on to judge it, and `harness verify` judges it too (it
    said UNKNOWN, exit 2, of a run that had passed); a drain that raised is not judged."""
    log = PhaseLog(tmp_path, None)
    with log.phase("drain") as detail:
        detail["_outcome"] = "failed"
    assert json.loads((tmp_path / "phases.json").read_text())[0]["outcome"] == "failed"
    assert interruption(tmp_path) is None
    (tmp_path / "phases.json").write_text(json.dumps([
        {"name": "drain", "outcome": "failed", "error": "KafkaException: broker down"}]))
    assert interruption(tmp_path).startswith("failed in phase drain (KafkaException: broker down)")


def test_a_run_killed_mid_phase_reads_as_killed(tmp_path):
    (tmp_path / "phases.json").write_text(json.dumps([
        {"name": "validate", "outcome": "ok", "error": None},
        {"name": "warm-up", "outcome": None, "error": None}]))
    assert interruption(tmp_path).startswith("killed in phase warm-up")
