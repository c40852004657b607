"""Controller failover: kill, pause or isolate the active controller (the
KRaft quorum leader in combined or isolated mode, the controller broker in
ZooKeeper mode), then record the new controller when one appears.

The new controller is written as an `observe` event `controller` (with the
fault_id and the seconds it took) and into the fault's own detail.
"""
from __future__ import annotations

import time
from typing import Any

from clusters.api import BROKER_ROLES, CONTROLLER_ROLES
from faults.base import BaseFault, FaultContext, FaultError, nodes_in_words
from faults.network import Partition, isolate
from faults.pause import DOCKER, Pause
from faults.process import HARD, Kill
from faults.selectors import active_controller, node

METHODS = ("kill", "pause", "isolate")
ACTIVE_CONTROLLER_METRIC = "kafka_controller_kafkacontroller_activecontrollercount"


class ControllerFailover(BaseFault):
    def __init__(self, method: str = "kill", *, wait_for_new_s: float | None = None,
                 pause_method: str = DOCKER):
        super().__init__()
        if method not in METHODS:
            raise FaultError(f"method must be one of {METHODS}, got {method!r}")
        self.method, self.wait_for_new_s, self.pause_method = method, wait_for_new_s, pause_method
        self.name = f"controller-{method}"
        self.inner: BaseFault | None = None

    def _inject(self, ctx: FaultContext) -> None:
        old = active_controller(ctx)[0]
        self.targets = [old]
        self.detail = {"method": self.method, "previous_controller": old.name,
                       "previous_controller_id": old.node_id}
        target = node(old.name)
        if self.method == "kill":
            self.inner = Kill(target, HARD)
        elif self.method == "pause":
            self.inner = Pause(target, self.pause_method)
        else:
            self.inner = Partition(isolate(target))
        # The inner fault does the work; this fault owns the events.
        self.inner._inject(ctx)
        self.detail.update({k: v for k, v in self.inner.detail.items() if k not in self.detail})
        self._await_new_controller(ctx, old)

    def _await_new_controller(self, ctx: FaultContext, old) -> None:
        timeout = self.wait_for_new_s if self.wait_for_new_s is not None else ctx.settle_timeout_s
        start = time.monotonic()
        new = None
        while time.monotonic() - start < timeout:
            current = self._current_controller(ctx, old)
            if current is not None and current.name != old.name:
                new = current
                break
            time.sleep(0.5)
        seconds = round(time.monotonic() - start, 3)
        self.detail["new_controller"] = new.name if new else None
        self.detail["new_controller_id"] = new.node_id if new else None
        self.detail["failover_s"] = seconds if new else None
        if new is not None:
            ctx.emit("observe", "controller", new.name, fault_id=self.fault_id,
                     controller_id=new.node_id, previous=old.name, after_s=seconds)

    @staticmethod
    def _current_controller(ctx: FaultContext, old):
        try:
            current = ctx.cluster.active_controller()
        except Exception:  # noqa: BLE001 - metadata requests fail during elections
            current = None
        if current is not None:
            return current
        # An isolated old controller may still claim the role (it cannot learn
        # that it lost it), so the cluster sees two; ask the others alone.
        metrics = getattr(ctx.cluster, "metrics", None)
        if metrics is None:
            return None
        roles = CONTROLLER_ROLES if ctx.cluster.nodes(CONTROLLER_ROLES) else BROKER_ROLES
        claiming = []
        for n in ctx.cluster.nodes(roles):
            if n.name == old.name:
                continue
            try:
                if metrics(n).get(ACTIVE_CONTROLLER_METRIC, 0) >= 1:
                    claiming.append(n)
            except Exception:  # noqa: BLE001 - a node that does not answer claims nothing
                pass
        return claiming[0] if len(claiming) == 1 else None

    def _heal(self, ctx: FaultContext) -> None:
        if self.inner is not None and self.inner.targets:
            self.inner._heal(ctx)


def controller_words(name: str, names: list[str], detail: dict[str, Any]) -> str:
    """The controller faults' words (a quorum change's too: it has no `method`)."""
    how = {"kill": "killed", "pause": "paused", "isolate": "cut off from every other node"}
    return f"the active controller {detail.get('previous_controller', nodes_in_words(names))} " \
           f"{how.get(detail.get('method'), 'stopped')}"
