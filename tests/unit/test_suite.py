"""Suites without clusters: loading, expansion over modes × versions × repeats, the budget,
and the three outputs written from rows."""
from __future__ import annotations

import json
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest

from core.errors import SpecError
from harness.batch.suite import expand, load_suite, parse_budget, suite_tally
from harness.batch.suite_report import stability, write_outputs


def test_builtin_gate_suite_loads_and_every_scenario_validates():
    suite = load_suite("gate")
    runs, skipped = expand(suite, [], [], 1)
    assert [s.name for _, s in runs] == ["quick", "leader-isolation"] and not skipped


def test_nightly_is_one_nemesis_per_topology_then_every_claim_and_all_validate():
    nightly, claims = load_suite("nightly"), load_suite("claims")
    assert nightly.scenarios[:3] == ["nightly-kraft-combined", "nightly-kraft-isolated", "nightly-zookeeper"]
    assert nightly.scenarios[3:] == claims.scenarios
    runs, _ = expand(nightly, [], [], 1)
    topologies = {(s.cluster.mode, s.cluster.kafka.version.split(".")[0], s.cluster.controllers)
                  for _, s in runs[:3]}
    assert topologies == {("kraft-combined", "3", 1), ("kraft-isolated", "4", 3), ("zookeeper", "3", 1)}  # controllers: only isolated mode reads it
    assert len(runs) == len(nightly.scenarios)


def test_a_suite_cannot_include_itself(tmp_path):
    (tmp_path / "loop.yaml").write_text("name: loop\nscenarios: [quick]\ninclude: [loop]\n")
    with pytest.raises(SpecError, match="includes itself"):
        load_suite(str(tmp_path / "loop.yaml"))


def test_expansion_skips_zookeeper_on_4_and_repeats_with_new_seeds():
    suite = load_suite("gate")
    runs, skipped = expand(suite, ["kraft-combined", "zookeeper"], ["3.9", "4"], 2)
    combos = {(s.name, s.cluster.mode, s.cluster.kafka.version.split(".")[0]) for _, s in runs}
    assert ("quick", "zookeeper", "3") in combos and ("quick", "kraft-combined", "4") in combos
    assert not any(mode == "zookeeper" and v == "4" for _, mode, v in combos)
    assert any("ZooKeeper mode does not exist" in s["why"] for s in skipped)
    seeds = sorted(s.seed for v, s in runs if s.name == "quick" and s.cluster.mode == "kraft-combined"
                   and s.cluster.kafka.version.startswith("3.9"))
    assert seeds == [1, 2]                            # the scenario's seed, then seed + 1


def test_a_folder_is_a_suite_and_applies_to_limits_it(tmp_path):
    (tmp_path / "a.yaml").write_text("name: a\napplies_to: {modes: [zookeeper]}\n"
                                     "cluster: {mode: zookeeper, version: '3.9'}\n"
                                     "workload: {producers: [{}]}\n")
    runs, skipped = expand(load_suite(str(tmp_path)), ["kraft-combined", "zookeeper"], [], 1)
    assert [(s.name, s.cluster.mode) for _, s in runs] == [("a", "zookeeper")]
    assert skipped[0]["mode"] == "kraft-combined" and "applies_to" in skipped[0]["why"]


def test_mode_kraft_keeps_each_scenarios_own_kraft_mode():
    runs, skipped = expand(load_suite("claims"), ["kraft", "zookeeper"], ["3.9"], 1)
    modes = {(s.name, s.cluster.mode) for _, s in runs}
    assert ("claim-durable-leader-kill", "kraft-combined") in modes
    assert ("claim-unclean-election-enabled", "kraft-isolated") in modes     # written for isolated
    assert ("claim-unclean-election-enabled", "zookeeper") in modes
    assert ("claim-unclean-election-disabled", "zookeeper") in modes
    # only claim 13's ELR variants of the unclean shape are left out: they apply to 4.1+
    unclean = [s for s in skipped if s["scenario"].startswith("claim-unclean")]
    assert len(unclean) == 4 and all("applies_to" in s["why"] for s in unclean)


def test_bad_suite_input_is_refused():
    with pytest.raises(SpecError, match="use one of: .*gate"):
        load_suite("nope")
    with pytest.raises(SpecError, match="90m"):
        parse_budget("ninety")
    assert parse_budget("90m") == 5400 and parse_budget("2h") == 7200 and parse_budget("30s") == 30


def _row(scenario, verdict, repeat=0, **kw):
    return {"scenario": scenario, "claim": "c", "mode": "kraft-combined", "version": "3.9.2",
            "repeat": repeat, "seed": repeat, "configuration": "RF 3", "fault": "kill",
            "expected": ["lost == 0"], "verdict": verdict, **kw}


def test_outputs_from_rows(tmp_path: Path):
    run = tmp_path / "r1"
    rows = [_row("a", "passed", 0, run_dir=str(run)), _row("a", "failed", 1, failures=["lost: 3 > 0"],
                                                           observed={"lost": 3}, run_dir=str(run)),
            _row("b", "skipped", why="budget")]
    write_outputs(tmp_path, "s", rows, [], 12.0)
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["rows"][0]["stability"] == "flaky (1/2 passed)"
    junit = ET.parse(tmp_path / "junit.xml").getroot()
    assert junit.get("tests") == "3" and junit.get("failures") == "1" and junit.get("skipped") == "1"
    html = (tmp_path / "index.html").read_text()
    assert "r1/report/index.html" in html and "lost 3" in html and "budget" in html
    md = (tmp_path / "summary.md").read_text().splitlines()
    assert md[2].startswith("| claim | configuration |") and len(md) == 4 + len(rows)
    assert "lost 3; lost: 3 > 0" in md[5] and "[report](r1/report/index.html)" in md[5]
    assert stability([_row("a", "passed"), _row("a", "passed", 1)]) == {("a", "kraft-combined", "3.9.2"): "solid"}


def test_observed_says_the_numbers_behind_each_expectation_and_the_claims_timings():
    from harness.batch.suite import observed
    from spark_reports.summary import Summary
    summary = {"anomalies": {"lost": 0, "duplicate": 3},
               "verdict": {"checks": [{"expectation": "lost == 0", "actual": 0.0},
                                      {"expectation": "acked_during_faults == 0", "actual": 45.0},
                                      {"expectation": "max_isr_restore_s <= 30", "actual": None}]},
               "metrics": {"max_recovery_s": 12.34, "max_unavailability_s": 3.0,
                           "isr": [{"shrunk_s": 9.1, "restored_after_heal_s": 1.72},
                                   {"shrunk_s": None, "restored_after_heal_s": None}]}}
    assert observed(Summary.from_dict(summary)) == {"duplicate": 3, "acked_during_faults": 45.0,
                                 "max_recovery_s": 12.3, "max_unavailability_s": 3.0,
                                 "isr_shrunk_after_s": 9.1, "isr_full_after_heal_s": 1.7}


def test_a_rows_observed_has_the_controller_failover_faults_json_measured(tmp_path: Path):
    from harness.batch.suite import _fault_timings
    (tmp_path / "faults.json").write_text(json.dumps([
        {"label": "controller-failover", "detail": {"failover_s": 2.54, "new_controller": "c-3"}},
        {"label": "kill", "detail": {}}]))
    assert _fault_timings(tmp_path) == {"controller_failover_s": 2.5}
    assert _fault_timings(tmp_path / "missing") == {}


def test_the_closing_count_leaves_variants_the_budget_skipped_out():
    rows = [{"verdict": "passed"}, {"verdict": "failed"}, {"verdict": "skipped"},
            {"verdict": "skipped"}]
    assert suite_tally(rows) == "1 of 2 run as expected, 2 skipped"
    assert suite_tally(rows[:1]) == "1 of 1 run as expected"


def _fake_runs(monkeypatch, outcomes: list):
    """run_suite with the runner replaced: each run's outcome in turn, a RunResult or an
    exception to raise (a Ctrl-C that lands between two runs)."""
    from harness.run.runner import RunResult
    calls = []

    def run_scenario(scenario, options):
        calls.append(scenario.name)
        outcome = outcomes[len(calls) - 1]
        if isinstance(outcome, BaseException):
            raise outcome
        status, interrupted = outcome
        run_dir = Path(options.runs_dir) / f"r{len(calls)}"
        run_dir.mkdir()
        return RunResult(f"r{len(calls)}", run_dir, 0 if status == "passed" else 2, status,
                         "interrupted in phase faults" if interrupted else None,
                         interrupted=interrupted)
    monkeypatch.setattr("harness.run.runner.run_scenario", run_scenario)
    monkeypatch.setattr("spark_reports.session.spark_session", lambda master: (None, False))
    return calls


@pytest.mark.parametrize("how", ["inside a run", "between runs"])
def test_an_interrupted_suite_starts_nothing_more_and_says_so(tmp_path, monkeypatch, how):
    from harness.batch.suite import NOT_STARTED, interrupted, run_suite
    suite = load_suite("claims")
    runs, _ = expand(suite, [], [], 1)
    stop = ("unknown", True) if how == "inside a run" else KeyboardInterrupt()
    calls = _fake_runs(monkeypatch, [("passed", False), stop])
    rows = run_suite(suite, runs, tmp_path, None, "none", None)
    assert len(calls) == 2 and len(rows) == len(runs)
    assert rows[0]["verdict"] == "passed" and not interrupted(rows[:1])
    not_started = rows[2:] if how == "inside a run" else rows[1:]
    assert all(r["verdict"] == "skipped" and r["why"] == NOT_STARTED for r in not_started)
    assert interrupted(rows)
    write_outputs(tmp_path, "claims", rows, [], 1.0)
    assert NOT_STARTED in (tmp_path / "summary.md").read_text()


def test_a_suite_that_ran_to_its_end_is_not_interrupted(tmp_path, monkeypatch):
    from harness.batch.suite import interrupted, run_suite
    suite = load_suite("gate")
    runs, _ = expand(suite, [], [], 1)
    _fake_runs(monkeypatch, [("passed", False), ("failed", False)])
    rows = run_suite(suite, runs, tmp_path, None, "none", None)
    assert [r["verdict"] for r in rows] == ["passed", "failed"] and not interrupted(rows)
