"""A run against a cluster the harness did not start: the scenario under the run's
topic prefix, the checks made before anything starts, the command plan `--dry-run`
prints, and `--watch`.

`for_run` renames what the run makes on the user's cluster: every topic
(`t` -> `harness-<run id>-t`), every consumer group, the drain's group and each
transactional id carry the prefix; fault targets follow their topics. scenario.yaml is
written as run, so the report and the history name the real topics.
"""
from __future__ import annotations

import json
import shlex
import shutil
from typing import Any

from clusters.external import ExternalCluster
from core.errors import SpecError
from faults.catalog import resolve_fault
from faults.exec import DESCRIBED_NODE_KEYS, OWN_NODE_KEYS, command_plan, scenario_nodes
from faults.selectors import PARTITION_SELECTORS
from harness.scenario import load_document, parse_scenario
from harness.scenario.model import Scenario

SHELL_WORDS = frozenset({"cd", "if", "for", "while", "case", "exec", "export", "true", "false", "test",
                         "[", "echo", "printf", "set", "until", "{", "(", "!", "eval", "command", ":"})


def for_run(s: Scenario, run_id: str) -> Scenario:
    """The scenario as run on an external cluster: its names under the run's prefix."""
    if s.cluster.external is None:
        return s
    prefix = s.cluster.external.prefix_for(run_id)
    w = s.workload

    def name(n: str) -> str:
        return prefix + n
    consumers = tuple(c.model_copy(update={"group_id": name(c.group_id), "topics": tuple(map(name, c.topics))})
                      for c in w.consumers)
    workload = w.model_copy(update={"producers": tuple(_producer(p, prefix) for p in w.producers),
                                    "consumers": consumers})
    drain = s.drain.model_copy(update={"topics": tuple(map(name, s.drain.topics)),
                                       "client_config": {"group.id": name("drain"), **s.drain.client_config}})
    timeline = tuple(_fault(i, e, prefix, s) for i, e in enumerate(s.faults.timeline))
    return s.model_copy(update={
        "topics": tuple(t.model_copy(update={"name": name(t.name)}) for t in s.topics),
        "workload": workload, "drain": drain,
        "faults": s.faults.model_copy(update={"timeline": timeline})})


def groups_of(s: Scenario) -> list[str]:
    """Every consumer group a run of `s` (as run) uses."""
    groups = [c.group_id for c in s.workload.consumers]
    groups += [p.transactions.input_group for p in s.workload.producers
               if p.transactions is not None and p.transactions.input_group]
    if "group.id" in s.drain.client_config:
        groups.append(s.drain.client_config["group.id"])
    return groups


def _producer(p, prefix: str):
    update: dict[str, Any] = {"topic": prefix + p.topic}
    t = p.transactions
    if t is not None:
        update["transactions"] = t.model_copy(update={
            "transactional_id": prefix + (t.transactional_id or p.name),
            "input_topic": prefix + t.input_topic if t.input_topic else None,
            "input_group": prefix + t.input_group if t.input_group else None})
    return p.model_copy(update=update)


def _target(spec: Any, prefix: str) -> Any:
    if not isinstance(spec, dict) or len(spec) != 1:
        return spec
    (key, args), = spec.items()
    if key in PARTITION_SELECTORS and isinstance(args, dict) and isinstance(args.get("topic"), str):
        return {key: {**args, "topic": prefix + args["topic"]}}
    if isinstance(args, dict) and "pool" in args:
        return {key: {**args, "pool": _target(args["pool"], prefix)}}
    return spec


def _fault(i: int, entry, prefix: str, s: Scenario):
    target = _target(entry.target, prefix)
    resolved = resolve_fault(entry.fault, target, entry.params, f"faults.timeline[{i}]", s.cluster)
    return entry.model_copy(update={"target": target, "resolved": resolved})


# -- before anything starts ------------------------------------------------------------------

def preflight(s: Scenario) -> None:
    """An external run's checks before a run dir exists (exit 2 naming the field): its
    secrets resolve, the cluster answers and accepts the credentials, the topic prefix
    is free, the user may create the topics, and each exec command's program is here."""
    check_programs(s)
    cluster = ExternalCluster(s.cluster, run_id="preflight")
    cluster.check([(t.name, t.partitions, t.replication_factor) for t in s.topics])


def check_programs(s: Scenario) -> None:
    for i, entry in enumerate(s.faults.timeline):
        if entry.fault != "exec":
            continue
        for field in ("inject", "heal"):
            command = getattr(entry.resolved.params, field)
            program = _program(command) if command else None
            if program and program not in SHELL_WORDS and shutil.which(program) is None:
                raise SpecError(f"{s.source} faults.timeline[{i}].params.{field}",
                                f"{program!r} is not a program on this machine's PATH",
                                "install it, or give its full path")


def _program(command: str) -> str | None:
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    words = [w for w in words if "=" not in w.split("/")[0] or w.startswith("-")]
    return words[0] if words and "{" not in words[0] else None


def plan_lines(s: Scenario) -> list[str]:
    """The commands each exec fault would run, per node it could pick (--dry-run)."""
    nodes = scenario_nodes(s.cluster)
    if nodes is None:
        keys = DESCRIBED_NODE_KEYS if s.cluster.external is not None else OWN_NODE_KEYS
        nodes = [("<node>", "broker", {k: f"<{k}>" for k in keys})]
    lines = []
    for i, e in enumerate(s.faults.timeline):
        if e.fault != "exec":
            continue
        hold = f", healed {e.hold:g} s later" if e.hold is not None else ", healed at heal-all"
        target = f", target {json.dumps(e.target)}" if e.target is not None else ""
        lines.append(f"timeline[{i}] exec at {e.at:g} s{hold}{target}:")
        p = e.resolved.params
        lines += [f"  {line}" for line in command_plan(p.inject, p.heal, e.target, nodes)]
    return lines


def watch(path_or_name: str | None, overrides: tuple[str, ...] = (),
          seed: int | None = None) -> tuple[Scenario, int]:
    """`--watch`: the scenario without its faults (the user makes their own changes while
    the load runs); and how many planned faults that drops. The faults go before the
    scenario is validated: their times need not fit a load shortened for the watch."""
    data, source = load_document(path_or_name, overrides, seed)
    faults = data.get("faults") if isinstance(data, dict) else None
    if not isinstance(faults, dict):
        return parse_scenario(data, source), 0
    timeline = faults.get("timeline")
    dropped = (len(timeline) if isinstance(timeline, list) else 0) + (1 if faults.get("nemesis") else 0)
    kept = {k: v for k, v in faults.items() if k not in ("timeline", "nemesis")}
    return parse_scenario({**data, "faults": kept}, source), dropped
