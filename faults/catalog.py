"""Named fault kinds for nemesis schedules and scenarios.

`make_fault(kind, ctx)` builds a fresh fault for one schedule step; the
kinds that aim at a partition use `topic` partition 0 unless told.
"""
from __future__ import annotations

from typing import Callable

from faults.base import BaseFault, FaultContext
from harness.errors import SpecError
from faults import network, selectors as sel
from faults.controller import ControllerFailover
from faults.disk import DiskFull
from faults.pause import DOCKER, SIGSTOP, Pause
from faults.process import CLEAN, HARD, Bounce, Kill
from faults.rolling import RollingRestart
from faults.zookeeper import ZkSessionExpiry


def catalog(topic: str, partition: int = 0) -> dict[str, Callable[[], BaseFault]]:
    leader = sel.leader_of(topic, partition)
    follower = sel.one_follower_of(topic, partition)
    return {
        "kill-leader": lambda: Kill(leader, HARD),
        "kill-follower": lambda: Kill(follower, HARD),
        "kill-broker": lambda: Kill(sel.random_broker, HARD),
        "terminate-leader": lambda: Kill(leader, CLEAN),
        "terminate-broker": lambda: Kill(sel.random_broker, CLEAN),
        "bounce-leader": lambda: Bounce(leader, CLEAN, times=2, interval_s=3, reselect=True),
        "bounce-leader-hard": lambda: Bounce(leader, HARD, times=2, interval_s=3, reselect=True),
        "controller-kill": lambda: ControllerFailover("kill"),
        "controller-pause": lambda: ControllerFailover("pause"),
        "controller-isolate": lambda: ControllerFailover("isolate"),
        "partition-isolate-broker": lambda: network.Partition(network.isolate(sel.random_broker)),
        "partition-halves": lambda: network.Partition(network.halves()),
        "partition-ring": lambda: network.Partition(network.ring()),
        "partition-bridge": lambda: network.Partition(network.bridge()),
        "partition-leader": lambda: network.Partition(network.isolate_leader(topic, partition)),
        "partition-clients": lambda: network.Partition(network.cut_clients()),
        "pause-leader": lambda: Pause(leader, DOCKER),
        "sigstop-leader": lambda: Pause(leader, SIGSTOP),
        "pause-controller": lambda: Pause(sel.active_controller, DOCKER),
        "disk-full-leader": lambda: DiskFull(leader),
        "zk-session-expiry": lambda: ZkSessionExpiry(sel.random_broker, "pause"),
        "rolling-restart": lambda: RollingRestart(CLEAN),
    }


def fault_factory(topic: str, partition: int = 0) -> Callable[[str, FaultContext], BaseFault]:
    kinds = catalog(topic, partition)

    def make_fault(kind: str, ctx: FaultContext) -> BaseFault:
        if kind not in kinds:
            raise SpecError("nemesis.kinds", f"unknown fault kind {kind!r}",
                            f"use one of {', '.join(sorted(kinds))}")
        return kinds[kind]()
    return make_fault
