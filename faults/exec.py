"""`exec`: a fault made of the user's own commands (kubectl, ssh, docker, a Chaos Mesh
manifest), for clusters the harness did not start and for anything it has no kind for.

    - at: 10
      fault: exec
      target: {leader_of: {topic: t, partition: 0}}
      params:
        inject: kubectl -n kafka delete pod {pod} --wait=false
        heal: kubectl -n kafka wait --for=condition=Ready pod/{pod} --timeout=300s
        timeout_s: 60

With a target, each command runs once per node the selector picks (selectors resolve
as for every kind: `leader_of` is a broker id at injection, and that id's node), its
template filled from that node: `{node}` (its name), `{id}`, and every field the node
has (an external cluster's `nodes:` entry; our own nodes have `container` and `ip`).
`{run_id}` is the run's id. Only a plain name in braces is a key: a `{` after a `$` is
the shell's (`${HOME}`), and so is one around anything else (`awk '{print $1}'`, a YAML
`{name: x}`); `{{pod}}` is a literal `{pod}`. Without a target, each command runs once
with `{run_id}` only.

Each command runs through /bin/sh with a timeout (its process group killed when it
expires); its exit status, seconds and output (the last 4000 characters, the cluster's
secrets scrubbed) go into the history: the `fault` row's `commands`, the `heal` row's
`heal_commands`. A command that fails or times out raises FaultError: a fault error in
the report, the run goes on (and heal-all runs the heal).
"""
from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from collections.abc import Callable, Iterable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from core.errors import SpecError
from faults.base import BaseFault, FaultContext, FaultError
from faults.selectors import Selector

# {{name}}: a literal {name}; {name}: a template key; a `{` after `$` is the shell's
TEMPLATE = re.compile(r"(?<!\$)\{\{([A-Za-z_][A-Za-z0-9_]*)\}\}|(?<!\$)\{([A-Za-z_][A-Za-z0-9_]*)\}")
OUTPUT_TAIL = 4000
GLOBAL_KEYS = ("run_id",)


def template_keys(command: str) -> list[str]:
    return [m.group(2) for m in TEMPLATE.finditer(command) if m.group(2)]


def render(command: str, values: dict[str, str]) -> str:
    """The command with each {key} filled in; KeyError naming a key `values` lacks."""
    def one(m: re.Match) -> str:
        return "{" + m.group(1) + "}" if m.group(1) else values[m.group(2)]
    return TEMPLATE.sub(one, command)


def node_vars(node: Any) -> dict[str, str]:
    """A node's template fields: an external node's own, or our container's."""
    own = getattr(node, "vars", None)
    if own is not None:
        return dict(own)
    out = {"node": node.name}
    if node.node_id is not None:
        out["id"] = str(node.node_id)
    for key, attr in (("container", "container_name"), ("ip", "ip")):
        try:
            out[key] = str(getattr(node, attr))
        except Exception:  # noqa: BLE001 - a node that cannot say: the key is missing
            pass
    return out


def run_command(command: str, timeout_s: float, redact: Callable[[str], str]) -> dict[str, Any]:
    """Run one shell command; its record (exit_code None: it timed out)."""
    started = time.monotonic()
    proc = subprocess.Popen(["/bin/sh", "-c", command], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout_s)
        code = proc.returncode
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        code = None
    text = redact((out or b"").decode(errors="replace"))
    return {"command": command, "exit_code": code, "seconds": round(time.monotonic() - started, 3),
            "output": text[-OUTPUT_TAIL:]}


class Exec(BaseFault):
    name = "exec"

    def __init__(self, selector: Selector | None, inject: str, heal: str | None, timeout_s: float):
        super().__init__()
        self.selector, self.inject_cmd, self.heal_cmd, self.timeout_s = selector, inject, heal, timeout_s

    def _values(self, ctx: FaultContext) -> list[dict[str, str]]:
        run_id = {"run_id": str(getattr(ctx.cluster, "run_id", ""))}
        if not self.targets:
            return [run_id]
        return [{**node_vars(n), **run_id} for n in self.targets]

    def _run(self, ctx: FaultContext, command: str, records: list) -> None:
        redact = getattr(ctx.cluster, "redact", None) or (lambda s: s)
        for values in self._values(ctx):
            try:
                line = render(command, values)
            except KeyError as e:
                raise FaultError(f"{values.get('node', 'the fault')} has no {{{e.args[0]}}} for "
                                 f"`{command}`") from None
            record = {"node": values.get("node"), **run_command(line, self.timeout_s, redact)}
            records.append(record)
            if record["exit_code"] != 0:
                how = f"timed out after {self.timeout_s:g} s" if record["exit_code"] is None \
                    else f"exited {record['exit_code']}"
                raise FaultError(f"`{line}` {how}: {record['output'].strip()[-500:]}")

    def _inject(self, ctx: FaultContext) -> None:
        self.targets = list(self.selector(ctx)) if self.selector is not None else []
        self.detail = {"selector": getattr(self.selector, "__name__", None), "commands": [],
                       "node_ids": [n.node_id for n in self.targets]}
        self._run(ctx, self.inject_cmd, self.detail["commands"])

    def _heal(self, ctx: FaultContext) -> None:
        if self.heal_cmd is None:
            return
        records: list = []
        self.heal_notes["heal_commands"] = records
        self._run(ctx, self.heal_cmd, records)


def candidate_nodes(target_spec: Any, nodes: Iterable[tuple[str, str, dict[str, str]]]) -> list:
    """The (name, role, vars) a selector could pick, as far as a scenario tells before a run:
    the named node, controllers for the controller selectors, brokers for the partition and
    broker selectors, every node otherwise."""
    nodes = list(nodes)
    name = next(iter(target_spec)) if isinstance(target_spec, dict) else target_spec
    if name == "node":
        wanted = str(target_spec["node"])
        return [n for n in nodes if n[0] == wanted or n[2].get("id") == wanted]
    if name in ("active_controller", "quorum_leader", "controllers"):
        return [n for n in nodes if n[1] in ("controller", "combined")]
    if name in ("leader_of", "followers_of", "one_follower_of", "in_sync_follower_of",
                "random_broker", "all_brokers"):
        return [n for n in nodes if n[1] in ("broker", "combined")]
    return nodes


def command_plan(inject: str, heal: str | None, target_spec: Any,
                 nodes: Iterable[tuple[str, str, dict[str, str]]], run_id: str = "<run-id>") -> list[str]:
    """The commands a fault would run, per node it could pick (for --dry-run)."""
    lines = []
    picks = candidate_nodes(target_spec, nodes) if target_spec is not None else [(None, None, {})]
    for name, _role, values in picks:
        values = {**values, "run_id": run_id}
        who = f"on {name}: " if name else ""
        lines.append(f"{who}inject: {render(inject, values)}")
        if heal:
            lines.append(f"{who}heal:   {render(heal, values)}")
    return lines


# -- the kind's params and checks (faults/catalog.py) -------------------------------------
class ExecParams(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    inject: str = Field(min_length=1, description="shell command that injects the fault")
    heal: str | None = Field(None, description="shell command that heals it (none: nothing to heal)")
    timeout_s: float = Field(30, gt=0, description="each command's time limit")


OWN_NODE_KEYS = ("node", "id", "container", "ip")
DESCRIBED_NODE_KEYS = ("node", "id", "host", "port")


def scenario_nodes(cluster: Any) -> list[tuple[str, str, dict[str, str]]] | None:
    """(name, role, template fields) of the nodes a scenario names (an external cluster's
    `nodes:`); None when they are only known at run time."""
    external = getattr(cluster, "external", None)
    if external is None or not external.nodes:
        return None
    return [(n.name, n.role, n.template_vars()) for n in external.nodes]


def check_templates(target_spec: Any, p: ExecParams, where: str, cluster: Any) -> None:
    """Every {key} of the commands is one each node the target could pick has."""
    nodes = scenario_nodes(cluster)
    for field in ("inject", "heal"):
        command = getattr(p, field)
        if command is None:
            continue
        for key in template_keys(command):
            if key in GLOBAL_KEYS:
                continue
            if target_spec is None:
                raise SpecError(f"{where}.params.{field}", f"{{{key}}} needs a node, and the fault "
                                "has no target", "add a target, or write only {run_id}")
            _check_key(key, target_spec, nodes, cluster, f"{where}.params.{field}")


def _check_key(key: str, target_spec: Any, nodes, cluster: Any, where: str) -> None:
    if nodes is None:
        known = DESCRIBED_NODE_KEYS if getattr(cluster, "external", None) is not None else OWN_NODE_KEYS
        if key not in known:
            raise SpecError(where, f"{{{key}}} is a key no node has", f"use one of {', '.join(known)}, "
                            "or list the nodes with that field under cluster.external.nodes")
        return
    candidates = candidate_nodes(target_spec, nodes)
    if not candidates:
        raise SpecError(where, "the target can pick none of the nodes under cluster.external.nodes",
                        "give the nodes' roles (role: controller) or name one of them")
    lacking = [n for n in candidates if key not in n[2]]
    if lacking:
        name, _, values = lacking[0]
        who = "no node has" if len(lacking) == len(candidates) else f"{name} lacks"
        raise SpecError(where, f"{{{key}}} is a key {who} ({name} has: {', '.join(sorted(values))})",
                        f"add {key}: … to each node under cluster.external.nodes")


def build_exec(selector: Selector | None, p: ExecParams) -> Exec:
    return Exec(selector, p.inject, p.heal, p.timeout_s)
