"""`harness suite NAME|DIR`: many scenarios as one job, one after another.

A suite is a YAML file (`harness/suites/<name>.yaml`: name, description,
scenarios, optional modes/versions (mode `kraft`: the scenario's own KRaft
mode), optional `include:` of other suites whose scenarios follow its own) or a
folder of scenario files. Each
scenario becomes one or more *variants*: every requested mode × version where
the scenario applies (`applies_to:` in the scenario, and what the cluster spec
allows: no ZooKeeper on 4.x), times `--repeat` seeds. Variants run in order,
each into its own run dir under the suite's dir, sharing one Spark session for
their verification; a variant that fails or cannot run does not stop the others.
`--budget` starts no variant that would not finish in time (its estimate: the
workload's duration plus a measured fixed cost), and lists what it skipped.
Writes summary.json, index.html and junit.xml (harness/batch/suite_report.py).
Exit 0 when every variant that ran was as expected, 1 otherwise, 2 when the
suite itself could not run.
"""
from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from clusters.versions import resolve_version
from core.errors import SpecError
from harness.run.runner import run_all
from harness.scenario import Scenario, load_scenario
from spark_reports.summary import Summary

SUITES_DIR = Path(__file__).parent.parent / "suites"
NOT_STARTED = "not started: the suite was interrupted"
FIXED_COST_S = 100.0          # cluster up, drain, stop, verify of a small run (benchmarks/RESULTS.md)


@dataclass(frozen=True)
class Variant:
    scenario: str            # file path or built-in name
    mode: str | None
    version: str | None
    repeat: int
    sets: tuple[str, ...] = ()   # the suite entry's own `set:` overrides

    @property
    def overrides(self) -> tuple[str, ...]:
        sets = list(self.sets)
        if self.mode is not None:
            sets.append(f"cluster.mode={self.mode}")
        if self.version is not None:
            sets.append(f"cluster.version={self.version}")
        return tuple(sets)


@dataclass
class SuiteSpec:
    name: str
    description: str
    scenarios: list[str]
    modes: list[str] = field(default_factory=list)
    versions: list[str] = field(default_factory=list)
    # per scenario entry, its `set:` overrides (an entry `{scenario: NAME, set: [K=V, …]}`
    # runs NAME with them, e.g. one claim with ELR on and off)
    sets: list[tuple[str, ...]] = field(default_factory=list)

    def entries(self) -> list[tuple[str, tuple[str, ...]]]:
        return list(zip(self.scenarios, self.sets or [()] * len(self.scenarios), strict=True))


def parse_budget(text: str | None) -> float | None:
    if text is None:
        return None
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(s|m|h)?\s*", text)
    if not m:
        raise SpecError(f"--budget {text}", "not a duration", "write e.g. 90m, 2h or 600s")
    return float(m[1]) * {"s": 1, "m": 60, "h": 3600, None: 60}[m[2]]


def load_suite(name_or_dir: str) -> SuiteSpec:
    path = Path(name_or_dir)
    if path.is_dir():
        files = sorted(str(p) for p in path.glob("*.yaml"))
        if not files:
            raise SpecError(str(path), "has no *.yaml scenario files", "point at a folder of scenarios")
        return SuiteSpec(path.name, f"every scenario in {path}", files)
    file = path if path.is_file() else SUITES_DIR / f"{name_or_dir}.yaml"
    if not file.is_file():
        known = ", ".join(sorted(p.stem for p in SUITES_DIR.glob("*.yaml")))
        raise SpecError(name_or_dir, "no such suite file, folder or built-in suite", f"use one of: {known}")
    doc = yaml.safe_load(file.read_text()) or {}
    if not isinstance(doc.get("scenarios"), list) or not doc["scenarios"]:
        raise SpecError(f"{file} scenarios", "is missing or empty", "list scenario names or files")
    entries = [_entry(e, file) for e in doc["scenarios"]]
    for other in doc.get("include") or []:        # another suite's scenarios, after these
        if str(other) == file.stem:
            raise SpecError(f"{file} include", f"{other!r} includes itself", "remove it")
        entries += [e for e in load_suite(str(other)).entries() if e not in entries]
    return SuiteSpec(str(doc.get("name", file.stem)), str(doc.get("description", "")),
                     [name for name, _ in entries],
                     [str(m) for m in doc.get("modes") or []], [str(v) for v in doc.get("versions") or []],
                     [sets for _, sets in entries])


def _entry(raw: Any, file: Path) -> tuple[str, tuple[str, ...]]:
    """A scenario entry: a name or file, or {scenario: NAME, set: [K=V, …]}."""
    sets: tuple[str, ...] = ()
    if isinstance(raw, dict):
        if set(raw) - {"scenario", "set"} or "scenario" not in raw:
            raise SpecError(f"{file} scenarios", f"entry {raw!r}", "write a name, or "
                            "{scenario: NAME, set: [key=value, ...]}")
        sets = tuple(str(x) for x in raw.get("set") or ())
        raw = raw["scenario"]
    name = str(raw)
    return (name if not name.endswith(".yaml") else str((file.parent / name).resolve())), sets


def expand(suite: SuiteSpec, modes: list[str], versions: list[str], repeat: int,
           ) -> tuple[list[tuple[Variant, Scenario]], list[dict[str, Any]]]:
    """The variants to run, each validated; and the ones that do not apply, with why."""
    runs, skipped = [], []
    for name, sets in suite.entries():
        base = load_scenario(name, sets)    # a broken scenario stops the suite before it starts
        for asked in modes or [None]:
            mode = _concrete_mode(base, asked)
            for version in versions or [None]:
                if not _applies(base, mode, version):
                    skipped.append({"scenario": base.name, "mode": mode, "version": version,
                                    "why": "the scenario does not apply here (applies_to)"})
                    continue
                for r in range(repeat):
                    v = Variant(name, mode, version, r, sets)
                    try:
                        s = load_scenario(name, v.overrides, base.seed + r)
                    except SpecError as e:
                        skipped.append({"scenario": base.name, "mode": mode, "version": version,
                                        "why": f"not applicable: {e}"})
                        break
                    runs.append((v, s))
    return runs, skipped


def _concrete_mode(s: Scenario, mode: str | None) -> str | None:
    """`kraft` asks for KRaft in whichever form the scenario was written for (a claim
    about unclean elections needs isolated controllers, a leader kill is written for
    combined mode); a ZooKeeper scenario asked for KRaft runs in the first KRaft mode
    it applies to."""
    if mode != "kraft":
        return mode
    if s.cluster.mode.startswith("kraft"):
        return s.cluster.mode
    return next((m for m in s.applies_to.modes if m.startswith("kraft")), "kraft-combined")


def _applies(s: Scenario, mode: str | None, version: str | None) -> bool:
    a = s.applies_to
    return (mode is None or not a.modes or mode in a.modes) and \
        (version is None or not a.versions or any(version_matches(version, w) for w in a.versions))


def version_matches(version: str, wanted: str) -> bool:
    """applies_to.versions: a major ('4': any 4.x), a line ('3.9': any 3.9.x), an exact
    version, or '>=4.1'."""
    try:
        have = resolve_version(version)
        if wanted.startswith(">="):
            return have.key >= resolve_version(wanted[2:].strip()).key[:2]
        want = resolve_version(wanted)
    except SpecError:
        return False
    if "." not in wanted:
        return have.major == want.major
    return have.version == want.version if wanted.count(".") == 2 else have.line == want.line


def estimate_s(s: Scenario) -> float:
    return s.workload.duration_s + FIXED_COST_S


def run_suite(suite: SuiteSpec, runs: list[tuple[Variant, Scenario]], suite_dir: Path,
              budget_s: float | None, progress: str, spark_master: str | None) -> list[dict]:
    rows: list[dict] = []
    started = time.monotonic()

    def label(i: int, variant: Variant, scenario: Scenario) -> str:
        return f"[{i + 1}/{len(runs)}] {scenario.name} {variant.mode or scenario.cluster.mode} " \
               f"{variant.version or scenario.cluster.version} #{variant.repeat}"

    def scenario_of(i: int, item: tuple[Variant, Scenario]) -> Scenario | None:
        variant, scenario = item
        elapsed = time.monotonic() - started
        if budget_s is not None and elapsed + estimate_s(scenario) > budget_s:
            rows.append(_row(variant, scenario, None, skipped=f"budget: {elapsed:.0f} s used, "
                             f"~{estimate_s(scenario):.0f} s needed of {budget_s:.0f} s"))
            print(f"{label(i, *item)}: skipped (budget)", flush=True)
            return None
        print(f"{label(i, *item)}: running", flush=True)
        return scenario

    def on_result(i: int, item: tuple[Variant, Scenario], result) -> None:
        rows.append(_row(*item, result))
        print(f"{label(i, *item)}: {result.status} (exit {result.exit_code})", flush=True)

    run_all(runs, scenario_of, suite_dir, progress, spark_master, on_result)
    return rows + [{**_row(v, s, None, skipped=NOT_STARTED), "interrupted": True}
                   for v, s in runs[len(rows):]]


def interrupted(rows: list[dict]) -> bool:
    """Whether the suite was stopped (Ctrl-C, SIGTERM) before its end."""
    return any(r.get("interrupted") for r in rows)


def suite_tally(rows: list[dict]) -> str:
    """The suite's closing count: how many of the variants that ran were as expected,
    and how many were not started (--budget); a skipped variant is neither."""
    ran = [r for r in rows if r["verdict"] != "skipped"]
    text = f"{sum(r['verdict'] == 'passed' for r in ran)} of {len(ran)} run as expected"
    skipped = len(rows) - len(ran)
    return text + (f", {skipped} skipped" if skipped else "")


def _faults_of(s: Scenario) -> str:
    names = [e.fault for e in s.faults.timeline]
    if s.faults.nemesis is not None:
        names.append("nemesis(" + ", ".join(s.faults.nemesis.presets) + ")")
    return ", ".join(names) or "none"


def _row(v: Variant, s: Scenario, result, skipped: str | None = None) -> dict:
    row = {"scenario": s.name, "claim": s.description, "mode": s.cluster.mode,
           "version": s.cluster.kafka.version, "repeat": v.repeat, "seed": s.seed,
           "configuration": _configuration(s), "fault": _faults_of(s),
           "expected": [e.text for e in s.expect.expectations]}
    if skipped is not None:
        return {**row, "verdict": "skipped", "why": skipped}
    summary = result.summary or Summary()
    if result.interrupted:
        row["interrupted"] = True
    return {**row, "verdict": result.status, "exit_code": result.exit_code, "reason": result.reason,
            "observed": {**observed(summary), **_fault_timings(Path(result.run_dir))},
            "failures": summary.failures, "run_dir": str(result.run_dir)}


def observed(summary: Summary) -> dict[str, Any]:
    """A row's evidence in numbers: every anomaly that occurred, the value behind each
    expectation, and the timings a claim is about (recovery, unavailability, the ISR's
    shrink and regrowth)."""
    anomalies = summary.anomalies
    out: dict[str, Any] = {k: n for k, n in anomalies.items() if n}
    for check in summary.verdict.get("checks") or []:
        metric = check["expectation"].split()[0]
        # an anomaly kind that did not occur goes unsaid: the verdict says it held
        if metric not in out and metric not in anomalies and check.get("actual") is not None:
            out[metric] = check["actual"]
    metrics = summary.metrics
    for key in ("max_recovery_s", "max_unavailability_s"):
        if metrics.get(key) is not None:
            out.setdefault(key, round(metrics[key], 1))
    shrunk = [f for f in metrics.get("isr") or [] if f["shrunk_s"] is not None]
    if shrunk:
        out.setdefault("isr_shrunk_after_s", round(min(f["shrunk_s"] for f in shrunk), 1))
        back = [f["restored_after_heal_s"] for f in shrunk]
        out.setdefault("isr_full_after_heal_s", None if None in back else round(max(back), 1))
    return out


def _fault_timings(run_dir: Path) -> dict[str, float]:
    """What faults measured themselves (faults.json): claim 10's controller failover,
    from the kill to a new active controller."""
    try:
        faults = json.loads((run_dir / "faults.json").read_text())
    except (OSError, ValueError):
        return {}
    failovers = [f["detail"]["failover_s"] for f in faults
                 if isinstance(f.get("detail"), dict) and f["detail"].get("failover_s") is not None]
    return {"controller_failover_s": round(max(failovers), 1)} if failovers else {}


def _configuration(s: Scenario) -> str:
    p = s.workload.producers[0] if s.workload.producers else None
    parts = [f"RF {s.topics[0].replication_factor}", f"min ISR {s.min_isr(s.topics[0])}"]
    if p is not None:
        parts += [f"acks={p.acks}", "idempotent" if p.enable_idempotence else "not idempotent"]
        if p.transactions is not None:
            parts.append("transactional")
    if s.unclean_elections(s.topics[0]):
        parts.append("unclean elections")
    if s.cluster.elr_enabled is not None:
        parts.append(f"ELR {'on' if s.cluster.elr_enabled else 'off'}")
    protocols = {c.group_protocol for c in s.workload.consumers} - {"classic"}
    if protocols:
        parts.append("group.protocol=" + ",".join(sorted(protocols)))
    return ", ".join(parts)
