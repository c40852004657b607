"""Expectations as data, facts from scenario.yaml, and the verdict's reasons."""
from __future__ import annotations

import dataclasses

import pytest

from core.errors import SpecError
from harness.scenario import derive_facts
from verifiers.expectations import DEFAULTS, Expectation, load_expectations, parse_expectation
from verifiers.verdict import judge, metric_value


def summary(**anomalies):
    base = {k: 0 for k in ("lost", "overwritten", "duplicate", "reordered", "unexpected",
                           "divergent", "aborted_read", "skipped", "redelivered", "recovered")}
    return {"counts": {"sent": 10, "acked": 9, "failed": 1, "indeterminate": 0, "consumed": 18},
            "anomalies": {**base, **anomalies},
            "metrics": {"ack_latency_ms": {"p50": 3.0, "p99": 40.0, "p999": 90.0, "max": 120.0},
                        "e2e_latency_ms": {"p50": None, "p99": None, "p999": None, "max": None},
                        "unavailability": [{"topic": "t", "partition": 0, "seconds": 12.5},
                                           {"topic": "t", "partition": 1, "seconds": 31.0}],
                        "recovery": [{"name": "kill-leader", "seconds": 4.0}]}}


ALL_TRUE = {f: True for f in ("idempotent", "transactional", "acks_all", "min_isr_2",
                              "clean_elections", "commit_after_processing", "durable")}


def test_parse_text_forms():
    e = parse_expectation("duplicate == 0 when idempotent")
    assert (e.metric, e.op, e.value, e.when, e.when_negated) == ("duplicate", "==", 0, "idempotent", False)
    assert parse_expectation("max_unavailability_s <= 30 s").value == 30
    assert parse_expectation("max_unavailability_s <= 1500 ms").value == 1.5
    assert parse_expectation("ack_latency_ms.p99 < 2 s").value == 2000
    assert parse_expectation("redelivered >= 0 when not idempotent").when_negated
    assert parse_expectation({"metric": "lost", "op": "==", "value": 0, "when": "durable"}) == \
        parse_expectation("lost == 0 when durable")


@pytest.mark.parametrize("bad, field", [
    ("lots == 0", "expectation 'lots'"),
    ("lost = 0", "expectation"),
    ("lost == 0 when lucky", "when lucky"),
    ("lost == 3 s", "expectation"),
    ({"metric": "lost", "op": "=="}, "expectation"),
])
def test_bad_expectations_name_the_field(bad, field):
    with pytest.raises(SpecError) as e:
        parse_expectation(bad)
    assert field in str(e.value)


def test_load_document_with_facts_and_defaults():
    s = load_expectations("expectations:\n  - max_unavailability_s <= 30\n"
                          "facts: {idempotent: false}\ninclude_defaults: true\n", "x.yaml")
    assert s.expectations[: len(DEFAULTS)] == DEFAULTS
    assert s.expectations[-1] == parse_expectation("max_unavailability_s <= 30")
    assert s.facts == (("idempotent", False),)
    assert load_expectations("- lost == 0\n", "y.yaml").expectations == (
        parse_expectation("lost == 0"), parse_expectation("workload_deaths == 0"),
        parse_expectation("fault_errors == 0"), parse_expectation("load_shortfall == 0"))
    with pytest.raises(SpecError, match="x.yaml: extra"):
        load_expectations("extra: 1\n", "x.yaml")
    with pytest.raises(SpecError, match="x.yaml: facts.speedy"):
        load_expectations("facts: {speedy: true}\n", "x.yaml")
    with pytest.raises(SpecError, match="not valid YAML"):
        load_expectations("a: [", "x.yaml")


def test_verdict_one_reason_per_failure():
    exps = load_expectations(None, "defaults")
    v = judge(summary(lost=3, duplicate=2, redelivered=7), exps, ALL_TRUE, {})
    assert v.status == "failed" and v.exit_code == 1
    assert v.failures == ("lost: 3 > 0 (expected lost == 0 when durable)",
                          "duplicate: 2 > 0 (expected duplicate == 0 when idempotent)")


def test_clean_summary_passes():
    v = judge(summary(redelivered=4, recovered=1), load_expectations(None, "d"), ALL_TRUE, {})
    assert v.status == "passed" and v.exit_code == 0 and v.failures == ()


def test_unknown_facts_are_not_judged_and_say_why():
    facts, sources = derive_facts(None)
    v = judge(summary(duplicate=5), load_expectations(None, "d"), facts, sources)
    assert v.status == "passed"
    assert ("duplicate == 0 when idempotent: not judged, idempotent is unknown "
            "(unknown: no scenario.yaml)") in v.not_judged


def test_conditions_that_do_not_hold_do_not_apply():
    facts = {**ALL_TRUE, "idempotent": False}
    v = judge(summary(duplicate=5), load_expectations(None, "d"), facts, {})
    assert v.passed
    assert "duplicate == 0 when idempotent: does not apply (idempotent is false)" in v.not_judged


def test_a_dead_workload_fails_whatever_expectations_were_chosen():
    # no include_defaults, and no word about deaths: a death still fails the run
    s = {"anomalies": {"lost": 0}, "counts": {"workload_deaths": 1}, "metrics": {}}
    v = judge(s, load_expectations("- lost == 0\n", "e"), ALL_TRUE, {})
    assert v.failures == ("workload_deaths: 1 > 0",)
    # a scenario that kills its own workload says how many deaths it allows
    v = judge(s, load_expectations("- lost == 0\n- workload_deaths <= 1\n", "e"), ALL_TRUE, {})
    assert v.failures == ()
    s["counts"]["workload_deaths"] = 0
    assert judge(s, load_expectations("- lost == 0\n", "e"), ALL_TRUE, {}).failures == ()


def test_derived_metrics():
    s = summary()
    assert metric_value(s, "max_unavailability_s") == (31.0, None)
    assert metric_value(s, "max_recovery_s") == (4.0, None)
    assert metric_value(s, "ack_latency_ms.p99") == (40.0, None)
    assert metric_value(s, "e2e_latency_ms.p99")[0] is None
    exps = load_expectations("- max_unavailability_s <= 30 s\n- e2e_latency_ms.p99 < 100\n", "e")
    # judged always (a run that did not do what it planned never passes)
    s["counts"].update(workload_deaths=0, fault_errors=0, load_shortfall=0)
    v = judge(s, exps, ALL_TRUE, {})
    assert v.failures == ("max_unavailability_s: 31 > 30",)
    assert v.not_judged == ("e2e_latency_ms.p99 < 100: not judged, e2e_latency_ms.p99 has no "
                            "value (no samples)",)
    s["metrics"]["recovery"].append({"name": "pause", "seconds": None})
    v = judge(s, load_expectations("- max_recovery_s <= 60\n", "e"), ALL_TRUE, {})
    assert v.failures == ("max_recovery_s: ∞ > 60 (never recovered from pause)",)


def test_facts_from_the_scenario_model():
    base = {"topics": [{"name": "t", "configs": {"min.insync.replicas": 2}}],
            "workload": {"producers": [{"topic": "t"}], "consumers": [{"topics": ["t"]}]}}
    facts, src = derive_facts(base)
    assert facts == {"idempotent": True, "transactional": False, "acks_all": True,
                     "min_isr_2": True, "clean_elections": True,
                     "commit_after_processing": True, "durable": True}
    assert src["idempotent"] == "scenario model"
    # acks=1 turns idempotence off unless asked (Kafka's client does the same)
    loose = {"cluster": {"config": {"unclean.leader.election.enable": True}},
             "topics": [{"name": "t"}],
             "workload": {"producers": [{"topic": "t", "acks": 1}],
                          "consumers": [{"topics": ["t"], "commit": "auto"}]}}
    facts, _ = derive_facts(loose)
    assert facts["idempotent"] is False and facts["acks_all"] is False
    assert facts["clean_elections"] is False and facts["min_isr_2"] is False
    assert facts["durable"] is False and facts["commit_after_processing"] is False
    txn = {"topics": [{"name": "t"}],
           "workload": {"producers": [{"topic": "t", "transactions": {"records_per_txn": 10}}]}}
    facts, src = derive_facts(txn)
    assert facts["transactional"] is True and facts["idempotent"] is True
    assert facts["commit_after_processing"] is None
    assert "no consumer group" in src["commit_after_processing"]


def test_a_document_that_is_not_a_scenario_has_unknown_facts():
    facts, src = derive_facts({"producer": {"acks": "all"}})
    assert set(facts.values()) == {None}
    assert "not a valid scenario" in src["durable"] and "producer" in src["durable"]


def test_expectation_is_frozen():
    e = Expectation("lost", "==", 0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        e.value = 1  # type: ignore[misc]


def test_verify_command_crash_is_exit_2_not_1(monkeypatch, tmp_path):
    import harness.run.judge as judge
    from harness.cli import main

    def boom(*a, **k):
        raise RuntimeError("java gateway exited")

    # where the verify command calls it (patching verifiers.verify would leak into
    # harness.run.judge if this test were the first to import it)
    monkeypatch.setattr(judge, "verify_run", boom)
    assert main(["verify", str(tmp_path)]) == 2


def test_verify_command_missing_run_dir(tmp_path, capsys):
    from harness.cli import main

    assert main(["verify", str(tmp_path / "nope")]) == 2
    assert "no such run directory" in capsys.readouterr().err


def test_verify_judges_a_stored_run_at_its_own_unavailability_threshold(tmp_path):
    """`harness verify RUN_DIR` reads the threshold the run was made with
    (report.unavailability_threshold_s in its resolved scenario.yaml), not a default."""
    from harness.run.judge import stored_judgement
    from harness.scenario import load_scenario

    stored = tmp_path / "scenario.yaml"
    stored.write_text(load_scenario("quick", ("report.unavailability_threshold_s=5",)).to_yaml())
    j = stored_judgement(str(tmp_path))
    assert (j.threshold_s, j.threshold_us) == (5.0, 5_000_000)
    assert j.scenario_doc["name"] == "quick" and j.facts["durable"] is not None
    stored.write_text("not: [a scenario")
    j = stored_judgement(str(tmp_path))
    assert j.threshold_s == 1.0 and j.facts["durable"] is None
    assert j.fact_sources["durable"].startswith("unknown: scenario.yaml is not a valid scenario")


def test_defaults_of_families_a_run_does_not_have_are_left_out():
    """A run with no share group, pipeline or compacted topic is not told that their
    kinds were 'not judged'; what a scenario writes stays, whichever family it names."""
    s = load_expectations("expectations:\n  - share_lost == 0\ninclude_defaults: true\n", "x.yaml")
    records_only = s.for_families(("records", "transactions"))
    kept = {e.metric for e in records_only.expectations}
    assert {"lost", "aborted_read", "workload_deaths"} <= kept
    assert "share_lost" in kept                                    # written by the scenario
    assert not kept & {"share_double_accept", "pipeline_lost", "compaction_stale"}
    assert {e.metric for e in s.for_families(("records", "shares")).expectations} >= {
        "share_lost", "share_double_accept"}
    everything = load_expectations(None, "none")
    assert everything.for_families(("records",)).expectations != everything.expectations
    assert "pipeline_lost" not in {e.metric for e in everything.for_families(("records",)).expectations}


def test_a_mirror_run_whose_groups_mm2_never_checkpointed_fails_by_default():
    """mirror_checkpoints > 0 when mirror_translates: a run in which a consumer group reads
    a mirrored topic and MM2 emitted no checkpoint judged no translated offset
    (translation_skip == 0 held with nothing to hold for); without a group it does not
    apply; a run without a mirror is not told about it."""
    import yaml

    from families.mirror.section import facts as mirror_facts
    from harness.scenario import BUILTIN_DIR
    doc = yaml.safe_load((BUILTIN_DIR / "mirror-mm2-kill.yaml").read_text())
    facts, sources = derive_facts(doc)
    assert facts["mirror_translates"] is True
    no_group = dict(doc, workload={k: v for k, v in doc["workload"].items() if k != "consumers"})
    assert derive_facts(no_group)[0]["mirror_translates"] is False
    # g0 reads orders; only audit is mirrored
    other = dict(doc, topics=[*doc["topics"], dict(doc["topics"][0], name="audit")],
                 workload=dict(doc["workload"], mirror=dict(doc["workload"]["mirror"], topics=["audit"])))
    assert derive_facts(other)[0]["mirror_translates"] is False
    assert mirror_facts(type("W", (), {"mirror": None})())["mirror_translates"] is False
    exps = load_expectations(None, "none").for_families(("records", "mirror"))
    summary = {"anomalies": {m: 0 for m in {e.metric for e in exps.expectations}},
               "counts": {"mirror_checkpoints": 0, "workload_deaths": 0, "fault_errors": 0,
                          "load_shortfall": 0}}
    for m in ("mirror_checkpoints", "workload_deaths", "fault_errors", "load_shortfall"):
        summary["anomalies"].pop(m, None)
    v = judge(summary, exps, facts, sources)
    assert v.status == "failed" and v.failures == (
        "mirror_checkpoints: 0 <= 0 (expected mirror_checkpoints > 0 when mirror_translates)",), v.failures
    summary["counts"]["mirror_checkpoints"] = 6
    assert judge(summary, exps, facts, sources).status == "passed"
    summary["counts"]["mirror_checkpoints"] = 0
    assert judge(summary, exps, dict(facts, mirror_translates=False), sources).status == "passed"
    records_only = load_expectations(None, "none").for_families(("records",))
    assert "mirror_checkpoints" not in {e.metric for e in records_only.expectations}


@pytest.mark.parametrize("builtin, family, count, bad, good, fact", [
    ("pipeline-eos-processor-churn", "pipelines", "pipeline_handovers", 0, 2, "pipeline_churned"),
    ("share-member-churn", "shares", "share_held_returns", 0, 1, "share_churned"),
    ("compaction-under-faults", "compacted", "compacted_cleaner_not_passed", 1, 0, None),
    ("mirror-mm2-kill", "mirror", "mirror_partitions_behind", 3, 0, None),
])
def test_a_run_that_exercised_nothing_of_its_family_fails_by_default(builtin, family, count, bad,
                                                                      good, fact):
    """Each family's default that its run exercised what its kinds judge: a pipeline churn
    that moved no state (every instance it hit had committed nothing), a share churn that
    returned no record (every member it hit held nothing), a compacted topic the cleaner
    never passed, a mirror whose MM2 had not caught up (mirror_lost judges no record of
    the partitions behind). The built-in scenario has the fact; without it, the default
    does not apply; a run without the family is not told of it."""
    import yaml

    from harness.scenario import BUILTIN_DIR
    facts, sources = derive_facts(yaml.safe_load((BUILTIN_DIR / f"{builtin}.yaml").read_text()))
    if fact:
        assert facts[fact] is True
    exps = load_expectations(None, "none").for_families(("records", family))
    counts = {count: bad, "workload_deaths": 0, "fault_errors": 0, "load_shortfall": 0,
              **({"mirror_checkpoints": 4} if family == "mirror" else {})}
    summary = {"anomalies": {m: 0 for m in {e.metric for e in exps.expectations} - set(counts)},
               "counts": counts}
    v = judge(summary, exps, facts, sources)
    assert v.status == "failed" and len(v.failures) == 1 and v.failures[0].startswith(f"{count}: "), v.failures
    summary["counts"][count] = good
    assert judge(summary, exps, facts, sources).status == "passed"
    if fact:
        summary["counts"][count] = bad
        assert judge(summary, exps, dict(facts, **{fact: False}), sources).status == "passed"
    records_only = load_expectations(None, "none").for_families(("records",))
    assert count not in {e.metric for e in records_only.expectations}
