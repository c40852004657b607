"""Process faults: hard kill (SIGKILL), clean shutdown (SIGTERM), bounces.

`Kill` stops its targets on inject and starts them on heal; the time between
the two is the restart delay (the schedule, or `restart_after_s` when the
fault should restart by itself). `Bounce` kills and restarts N times inside
inject. Targets come from a selector: a partition leader, a follower, any broker.

Brokers are started as a process supervisor would (`start_supervised`): one that
exits while starting is started again, and the restarts are recorded.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from clusters.api import BROKER_ROLES, DOWN_STATES, BrokerReadiness, Cluster, Node
from core.history import now_us
from faults.base import BaseFault, FaultContext, FaultError, container_status, nodes_in_words
from faults.selectors import Selector

HARD = "SIGKILL"
CLEAN = "SIGTERM"


def stop_node(node, signal: str, stop_timeout_s: float) -> None:
    """Stop a node. One already down is left as it is: what the fault wants holds.
    (A ZooKeeper-mode broker restarted before its old ZooKeeper session expired exits
    at start with NodeExists; Docker then refuses to kill it, 409.)"""
    if signal not in (HARD, CLEAN):
        raise FaultError(f"signal must be {HARD} or {CLEAN}, got {signal!r}")
    if container_status(node) in DOWN_STATES:
        return
    try:
        if signal == HARD:
            node.kill("SIGKILL")
        else:
            node.stop(timeout=stop_timeout_s)  # docker stop: SIGTERM, then SIGKILL at the timeout
    except Exception:
        if container_status(node) not in DOWN_STATES:   # it exited by itself meanwhile
            raise


# Pause before starting again a broker that exited while starting (systemd's RestartSec).
RESTART_DELAY_S = 2.0


@dataclass
class Started:
    """How one supervised start went."""

    node: str
    at_us: int                  # when the start that held was made
    restarts: int = 0           # starts after the first: the broker exited while starting
    ready: bool | None = None   # reported RUNNING in time (None: not a broker, or cannot tell)


def start_supervised(nodes: list[Node], cluster: Cluster, timeout_s: float) -> list[Started]:
    """Start every node, then see the brokers among them through start-up together, as
    systemd's Restart=on-failure would: one that exits while starting is started again
    until it reports RUNNING or `timeout_s` passes. Why: a ZooKeeper-mode broker started
    before its old ZooKeeper session expired (18 s by default) exits at once
    (NodeExists); deployments have a supervisor for that, and without one the broker
    stayed down until some later fault happened to start it. All are started first,
    back to back, so a heal of two followers is timed as the two starts it is, not as
    one start and a wait. A broker still starting at `timeout_s` (e.g. cut off from the
    harness) is left running, `ready=False`."""
    starts = []
    for node in nodes:
        node.start()
        starts.append(Started(node.name, now_us()))
    if not isinstance(cluster, BrokerReadiness):
        return starts
    watched = [(n, s) for n, s in zip(nodes, starts) if n.role in BROKER_ROLES]
    if exited := _supervise(watched, cluster, time.monotonic() + timeout_s):
        raise FaultError("; ".join(_exited_every_time(n, s, timeout_s) for n, s in exited))
    return starts


def _supervise(watched: list[tuple[Node, Started]], cluster: BrokerReadiness,
               deadline: float) -> list[tuple[Node, Started]]:
    """Poll the watched brokers until each is RUNNING (`ready=True`) or the deadline.
    One found down is started again RESTART_DELAY_S later; the others are watched
    meanwhile. At the deadline a broker still up is `ready=False`; those down (they
    exited at every start) are returned."""
    watched, down_since = list(watched), {}
    while watched and time.monotonic() < deadline:
        for node, started in list(watched):
            if container_status(node) in DOWN_STATES:
                since = down_since.setdefault(node.name, time.monotonic())
                if time.monotonic() - since >= RESTART_DELAY_S:
                    node.start()
                    started.at_us, started.restarts = now_us(), started.restarts + 1
                    del down_since[node.name]
            elif cluster.broker_ready(node):
                started.ready = True
                watched.remove((node, started))
        if watched:
            time.sleep(0.5)
    still_up = [(n, s) for n, s in watched if container_status(n) not in DOWN_STATES]
    for _, started in still_up:
        started.ready = False
    return [pair for pair in watched if pair not in still_up]


def _exited_every_time(node: Node, started: Started, timeout_s: float) -> str:
    tail = "\n".join(node.logs().splitlines()[-15:])
    return (f"{node.name} exited at every start for {timeout_s:.0f} s "
            f"({started.restarts} restarts); its last lines:\n{tail}")


def ensure_running(nodes: list[Node], ctx: FaultContext) -> list[Started]:
    """Start the nodes that are down, together (supervised). A paused node is up:
    another fault froze it and resumes it (Docker refuses to start a paused container)."""
    down = [n for n in nodes if not n.is_running() and container_status(n) != "paused"]
    return start_supervised(down, ctx.cluster, ctx.settle_timeout_s) if down else []


def start_notes(starts: list[Started]) -> dict:
    """What a heal or fault row says about its supervised starts: the brokers that
    exited while starting and how often, and those not yet RUNNING when it gave up."""
    notes: dict = {}
    if restarts := {s.node: s.restarts for s in starts if s.restarts}:
        notes["restarts_at_start"] = restarts
    if not_ready := [s.node for s in starts if s.ready is False]:
        notes["not_ready"] = not_ready
    return notes


def note_heal_starts(fault: BaseFault, starts: list[Started]) -> None:
    """Put the supervised starts into the fault's heal row, timed at the last start
    that held (not when the broker finished starting)."""
    fault.heal_notes.update(start_notes(starts))
    if times := [s.at_us for s in starts]:
        fault.healed_at_us = max(times)


class Kill(BaseFault):
    def __init__(self, selector: Selector, signal: str = HARD, *,
                 restart_after_s: float | None = None, stop_timeout_s: float = 60):
        super().__init__()
        if signal not in (HARD, CLEAN):
            raise FaultError(f"signal must be {HARD} or {CLEAN}, got {signal!r}")
        self.name = "kill" if signal == HARD else "terminate"
        self.selector = selector
        self.signal = signal
        self.restart_after_s = restart_after_s
        self.heal_after_s = restart_after_s
        self.stop_timeout_s = stop_timeout_s

    def _inject(self, ctx: FaultContext) -> None:
        self.targets = list(self.selector(ctx))
        self.detail = {"signal": self.signal, "selector": getattr(self.selector, "__name__", "?"),
                       "node_ids": [n.node_id for n in self.targets]}
        for node in self.targets:
            stop_node(node, self.signal, self.stop_timeout_s)

    def _heal(self, ctx: FaultContext) -> None:
        note_heal_starts(self, ensure_running(self.targets, ctx))


class Bounce(BaseFault):
    """Stop and start the targets `times` times, `interval_s` down and up each time."""

    def __init__(self, selector: Selector, signal: str = CLEAN, *, times: int = 3,
                 interval_s: float = 5.0, stop_timeout_s: float = 60,
                 reselect: bool = False):
        super().__init__()
        if times < 1:
            raise FaultError(f"times must be >= 1, got {times}")
        self.name = "bounce-hard" if signal == HARD else "bounce-clean"
        self.selector, self.signal, self.times = selector, signal, times
        self.interval_s, self.stop_timeout_s, self.reselect = interval_s, stop_timeout_s, reselect

    def _inject(self, ctx: FaultContext) -> None:
        self.detail = {"signal": self.signal, "times": self.times, "interval_s": self.interval_s,
                       "selector": getattr(self.selector, "__name__", "?"), "rounds": []}
        starts: list[Started] = []
        for round_ in range(self.times):
            # reselect: "bounce the leader" follows leadership as it moves.
            nodes = list(self.selector(ctx)) if (self.reselect or not self.targets) else self.targets
            self.targets = list({n.name: n for n in [*self.targets, *nodes]}.values())
            self.detail["rounds"].append([n.name for n in nodes])
            for node in nodes:
                stop_node(node, self.signal, self.stop_timeout_s)
            time.sleep(self.interval_s)
            starts += ensure_running(nodes, ctx)
            self.detail.update(start_notes(starts))
            if round_ + 1 < self.times:
                time.sleep(self.interval_s)

    def _heal(self, ctx: FaultContext) -> None:
        note_heal_starts(self, ensure_running(self.targets, ctx))


# -- in words (the kill, terminate and bounce kinds' words) ------------------------------
SIGNALS = {"SIGKILL": "killed (SIGKILL)", "SIGTERM": "stopped cleanly (SIGTERM)"}


def stopped_words(name: str, names: list[str], detail: dict[str, Any]) -> str:
    return f"{nodes_in_words(names)} {SIGNALS.get(detail.get('signal'), 'stopped')}"


def bounced_words(name: str, names: list[str], detail: dict[str, Any]) -> str:
    how = "killed (SIGKILL)" if name == "bounce-hard" else "stopped cleanly (SIGTERM)"
    return f"{nodes_in_words(names)} {how} and started again, {detail.get('times', 1)} time(s)"
