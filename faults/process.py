"""Process faults: hard kill (SIGKILL), clean shutdown (SIGTERM), bounces.

`Kill` stops its targets on inject and starts them on heal; the time between
the two is the restart delay (the schedule, or `restart_after_s` when the
fault should restart by itself). `Bounce` kills and restarts N times inside
inject. Targets come from a selector: a partition leader, a follower, any broker.
"""
from __future__ import annotations

import time

from clusters.api import DOWN_STATES
from faults.base import BaseFault, FaultContext, FaultError, container_status, wait_until
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


def ensure_running(node) -> None:
    if not node.is_running():
        node.start()


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
        for node in self.targets:
            ensure_running(node)


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
        for round_ in range(self.times):
            # reselect: "bounce the leader" follows leadership as it moves.
            nodes = list(self.selector(ctx)) if (self.reselect or not self.targets) else self.targets
            self.targets = list({n.name: n for n in [*self.targets, *nodes]}.values())
            self.detail["rounds"].append([n.name for n in nodes])
            for node in nodes:
                stop_node(node, self.signal, self.stop_timeout_s)
            time.sleep(self.interval_s)
            for node in nodes:
                ensure_running(node)
            if round_ + 1 < self.times:
                time.sleep(self.interval_s)

    def _heal(self, ctx: FaultContext) -> None:
        for node in self.targets:
            ensure_running(node)
        wait_until(lambda: all(n.is_running() for n in self.targets), 30,
                   what="bounced nodes running")
