"""`harness upgrade-check --from A --to B [--rollback]`: your cluster, upgraded under load, judged.

The scenario is yours (a file or a built-in name, with `--set` overrides: your
topology, topic and client configs) or, without one, the built-in
`claim-rolling-upgrade`. Its cluster starts on `--from`; its faults are replaced by
one rolling upgrade to `--to`, by the steps Kafka's upgrade notes give for the pair
(clusters/upgrade_paths.py: controllers first, then brokers, one node at a time
waiting for a full ISR, then the metadata version raised; ZooKeeper mode: the
inter.broker.protocol.version steps), printed before anything starts. The
workload runs through all of it and the run is judged like any other: nothing
lost, unavailability bounded (the scenario's expectations), each node's settle
time in faults.json and the report.

A pair Kafka does not support is refused (exit 2) with the reason: a downgrade,
ZooKeeper to 4.x (sent to `harness run zk-migration` first), a rollback across 3.x/4.x.
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from core.errors import SpecError

# the CLI (harness/cli/upgrade.py) imports this module as it builds its parsers: it imports
# nothing heavy at load time, the scenario model, Docker and Spark when the command runs.
if TYPE_CHECKING:
    from harness.scenario import Scenario

DEFAULT_SCENARIO = "claim-rolling-upgrade"
UPGRADE_AT_S = 10
# Seconds of load to keep per node upgraded: replace the container, restart, wait
# for a full ISR. A 3.9 -> 4 upgrade of 3 combined nodes took 48.5 s here, 16 s a
# node (benchmarks/RESULTS.md); twice that keeps the producers running past the end
# on a slower machine.
LOAD_PER_NODE_S = 30
LOAD_AFTER_S = 30


def upgrade_scenario(path_or_name: str | None, from_alias: str, to_alias: str,
                     overrides: tuple[str, ...] = (), seed: int | None = None,
                     rollback: bool = False) -> Scenario:
    """The scenario with its cluster on `from_alias` and one rolling upgrade to `to_alias`
    (and back, with `rollback`), the pair checked against Kafka's upgrade notes."""
    from clusters.upgrade_paths import UpgradeRefused, check_pair
    from clusters.versions import resolve_version
    from harness.scenario import load_scenario
    old, new = _version("--from", from_alias, resolve_version), _version("--to", to_alias, resolve_version)
    # its own faults go: they could not apply to the mode being checked (and, with none,
    # a load that ends after the faults has nothing to end after: the upgrade comes back)
    base = load_scenario(path_or_name or DEFAULT_SCENARIO, (
        *overrides, "faults={timeline: []}", "workload.end_after_faults_s=null"), seed)
    try:
        check_pair(old, new, base.cluster.mode, rollback)
    except UpgradeRefused as e:
        field = _where(path_or_name, overrides, ("cluster", "mode")) \
            if base.cluster.mode == "zookeeper" and new.major >= 4 else e.field
        raise SpecError(field, e.problem, e.fix) from None
    nodes = base.cluster.brokers + (base.cluster.controllers if base.cluster.mode == "kraft-isolated" else 0)
    passes = 2 if rollback or base.cluster.mode == "zookeeper" else 1   # back, or the protocol bump
    load_s = max(base.workload.duration_s or 0,
                 UPGRADE_AT_S + LOAD_PER_NODE_S * nodes * passes + LOAD_AFTER_S)
    upgrade = (f"faults={{timeline: [{{at: {UPGRADE_AT_S}, fault: rolling-upgrade, "
               f"params: {{to_version: '{new.version}', rollback: {str(rollback).lower()}}}}}]}}")
    what = f"{old.version} -> {new.version}" + (" and back" if rollback else "")
    return load_scenario(path_or_name or DEFAULT_SCENARIO, (
        *overrides, f"cluster.version='{old.version}'", upgrade, f"workload.duration_s={load_s}",
        f"description='upgrade check {what}: {_quoted(base.description)}'"),
        seed)


def upgrade_plan_of(scenario: Scenario):
    """The steps the run will take, from the scenario's cluster (printed before it starts)."""
    from clusters.config import plan_nodes
    from clusters.upgrade_paths import plan_upgrade
    from clusters.versions import resolve_version
    [upgrade] = scenario.faults.timeline
    spec = scenario.cluster
    return plan_upgrade(spec.kafka, resolve_version(upgrade.resolved.params.to_version), spec.mode,
                        [(p.alias, p.role) for p in plan_nodes(spec)],
                        rollback=upgrade.resolved.params.rollback)


def _where(path_or_name: str | None, overrides: tuple[str, ...], path: tuple) -> str:
    """file:line field (or the --set that wrote it), as every scenario error says."""
    from harness.scenario import _display, known_fields, resolve_path
    from harness.scenario.yamlsource import apply_set, load_yaml
    file = resolve_path(path_or_name or DEFAULT_SCENARIO)
    data, source = load_yaml(file.read_text(), _display(file))
    for assignment in overrides:
        data = apply_set(data, assignment, known_fields(), source)
    return source.where(path)


def _version(flag: str, alias: str, resolve):
    try:
        return resolve(alias)
    except SpecError as e:
        raise SpecError(flag, e.problem, e.fix) from None



def _quoted(text: str) -> str:
    return (text or "").replace("'", "''")


def upgrade_lines(run_dir: Path) -> str:
    """The upgrade's own account, from faults.json: each step's seconds (a node's is until
    a full ISR again), the metadata version raised, the whole upgrade's seconds."""
    import json
    try:
        [upgrade] = json.loads((Path(run_dir) / "faults.json").read_text())
    except (OSError, ValueError):
        return "upgrade: not started (no faults.json)"
    d = upgrade.get("detail") or {}
    lines = [f"upgrade {d.get('from_version', '?')} -> {d.get('to_version', '?')}"
             f"{' and back' if d.get('rollback') else ''}: {d.get('path', '')}; steps, in seconds:"]
    lines += [f"  {s['seconds']:7.1f} s  {s['text']}" for s in d.get("steps") or []]
    planned = len(d.get("plan") or []) - 1
    if planned > len(d.get("steps") or []):
        lines.append(f"  ({planned - len(d.get('steps') or [])} planned steps not done)")
    levels = d.get("features_after") or {}
    if levels:
        lines.append("  features now: " + ", ".join(f"{k} {v}" for k, v in sorted(levels.items())))
    took = (upgrade["inject_done_s"] - upgrade["injected_s"]) if upgrade.get("inject_done_s") else None
    lines.append(f"  the whole upgrade: {f'{took:.1f} s' if took is not None else 'did not finish'}"
                 + (f"; error: {upgrade['error']}" if upgrade.get("error") else ""))
    return "\n".join(lines)
