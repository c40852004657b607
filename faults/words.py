"""A fault in words, for people reading a report: which nodes it hit and what it did
to them ("kafka-2 cut off from every other node; clients still reach it").

Written from what every fault already records (its name, its targets, its detail),
so the fault classes stay as they are; a kind not listed here is described by its
name and targets. The words go into the fault's `fault` row (`description`), beside
the scenario's own name for it (`label`, e.g. "timeline[1] partition").
"""
from __future__ import annotations

from typing import Any

SIGNALS = {"SIGKILL": "killed (SIGKILL)", "SIGTERM": "stopped cleanly (SIGTERM)"}


def _nodes(names: list[str]) -> str:
    return ", ".join(names) if names else "no node"


def _partition(detail: dict[str, Any], names: list[str]) -> str:
    shape = detail.get("shape")
    grudge: dict[str, list] = detail.get("grudge") or {}
    if shape in ("isolate", "isolate-leader"):
        # the isolated node drops traffic from every other node; the others from it alone
        cut = [n for n, srcs in grudge.items() if len(grudge) > 2 and len(srcs) >= len(grudge) - 1]
        return f"{_nodes(sorted(cut or names))} cut off from every other node; clients still reach it"
    if shape == "majority-minority":
        return f"the cluster split in two ({_nodes(sorted(grudge))} each lose the other side)"
    if shape == "cut-clients":
        return f"clients cut off from {_nodes(names)}; the nodes still reach each other"
    if shape in ("ring", "bridge"):
        return f"a {shape} partition over {_nodes(sorted(grudge))} (each node sees only some others)"
    return f"network partition ({shape}) over {_nodes(names)}"


def describe(name: str, names: list[str], detail: dict[str, Any]) -> str:
    """The fault in one clause, from its name, its target node names and its detail."""
    nodes = _nodes(names)
    if name in ("kill", "terminate"):
        return f"{nodes} {SIGNALS.get(detail.get('signal'), 'stopped')}"
    if name.startswith("bounce"):
        how = "killed (SIGKILL)" if name == "bounce-hard" else "stopped cleanly (SIGTERM)"
        return f"{nodes} {how} and started again, {detail.get('times', 1)} time(s)"
    if name == "pause":
        return f"{nodes} paused ({detail.get('method', 'SIGSTOP')}): alive but silent"
    if name == "partition":
        return _partition(detail, names)
    if name.startswith("controller-"):
        how = {"kill": "killed", "pause": "paused", "isolate": "cut off from every other node"}
        return f"the active controller {detail.get('previous_controller', nodes)} " \
               f"{how.get(detail.get('method'), 'stopped')}"
    if name == "disk-full":
        return f"{nodes}'s log dir filled to the last byte"
    if name == "log-dir-unwritable":
        return f"{nodes}'s log dir made unwritable"
    if name.startswith("toxic-"):
        return f"{detail.get('toxic', name[6:])} on the links of {nodes} ({detail.get('attributes', {})})"
    if name.startswith("rolling-restart"):
        return f"{nodes} restarted one at a time, each waited for until its ISR was full"
    if name == "rolling-upgrade":
        return f"{nodes} upgraded one at a time to Kafka {detail.get('to_version')}"
    if name == "zk-session-expiry":
        return f"{nodes}'s ZooKeeper session expired"
    if name == "zk-migration":
        return "the cluster migrated from ZooKeeper to KRaft"
    return f"{name} on {nodes}"
