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

from clusters.api import BROKER_ROLES, DOWN_STATES, BrokerReadiness, Cluster, Node
from faults.base import BaseFault, FaultContext, FaultError, container_status
from faults.selectors import Selector
from harness.history import now_us

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


def start_supervised(node: Node, cluster: Cluster, timeout_s: float) -> Started:
    """Start a node and see a broker through its start-up, as systemd's
    Restart=on-failure would: one that exits while starting is started again until
    it reports RUNNING or `timeout_s` passes. Why: a ZooKeeper-mode broker started
    before its old ZooKeeper session expired (18 s by default) exits at once
    (NodeExists); deployments have a supervisor for that, and without one the broker
    stayed down until some later fault happened to start it. A broker still starting
    at `timeout_s` (e.g. cut off from the harness) is left running, `ready=False`."""
    node.start()
    started = Started(node.name, now_us())
    if node.role not in BROKER_ROLES or not isinstance(cluster, BrokerReadiness):
        return started
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if container_status(node) in DOWN_STATES:
            time.sleep(RESTART_DELAY_S)
            node.start()
            started.at_us, started.restarts = now_us(), started.restarts + 1
        elif cluster.broker_ready(node):
            started.ready = True
            return started
        else:
            time.sleep(0.5)
    if container_status(node) in DOWN_STATES:
        tail = "\n".join(node.logs().splitlines()[-15:])
        raise FaultError(f"{node.name} exited at every start for {timeout_s:.0f} s "
                         f"({started.restarts} restarts); its last lines:\n{tail}")
    started.ready = False
    return started


def ensure_running(node: Node, ctx: FaultContext) -> Started | None:
    """Start a node that is down (supervised); None when it is up. A paused node is up:
    another fault froze it and resumes it (Docker refuses to start a paused container)."""
    if node.is_running() or container_status(node) == "paused":
        return None
    return start_supervised(node, ctx.cluster, ctx.settle_timeout_s)


def start_notes(starts: list[Started | None]) -> dict:
    """What a heal or fault row says about its supervised starts: the brokers that
    exited while starting and how often, and those not yet RUNNING when it gave up."""
    done = [s for s in starts if s is not None]
    notes: dict = {}
    if restarts := {s.node: s.restarts for s in done if s.restarts}:
        notes["restarts_at_start"] = restarts
    if not_ready := [s.node for s in done if s.ready is False]:
        notes["not_ready"] = not_ready
    return notes


def note_heal_starts(fault: BaseFault, starts: list[Started | None]) -> None:
    """Put the supervised starts into the fault's heal row, timed at the last start
    that held (not when the broker finished starting)."""
    fault.heal_notes.update(start_notes(starts))
    if times := [s.at_us for s in starts if s is not None]:
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
        note_heal_starts(self, [ensure_running(node, ctx) for node in self.targets])


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
        starts: list[Started | None] = []
        for round_ in range(self.times):
            # reselect: "bounce the leader" follows leadership as it moves.
            nodes = list(self.selector(ctx)) if (self.reselect or not self.targets) else self.targets
            self.targets = list({n.name: n for n in [*self.targets, *nodes]}.values())
            self.detail["rounds"].append([n.name for n in nodes])
            for node in nodes:
                stop_node(node, self.signal, self.stop_timeout_s)
            time.sleep(self.interval_s)
            starts += [ensure_running(node, ctx) for node in nodes]
            self.detail.update(start_notes(starts))
            if round_ + 1 < self.times:
                time.sleep(self.interval_s)

    def _heal(self, ctx: FaultContext) -> None:
        note_heal_starts(self, [ensure_running(node, ctx) for node in self.targets])
