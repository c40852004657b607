"""Faults on a process a workload family runs beside the clusters (MirrorMaker 2 of the
mirror family, `mirror-maker`): killed (SIGKILL, healed by starting it again, its
configuration and its offsets where they were, as an operator's restart) or paused
(docker pause, healed by unpausing). The family hands the process over through the
fault context (`FaultContext.processes`); it has kill(), restart(), pause(), unpause()
and a `name` (its container), and knows it is down on purpose while a fault holds it.
"""
from __future__ import annotations

from typing import Any

from faults.base import BaseFault, FaultContext

MIRROR_MAKER = "mirror-maker"
KILL, PAUSE = "kill", "pause"


class ProcessFault(BaseFault):
    def __init__(self, process: str, action: str):
        super().__init__()
        self.process, self.action = process, action
        self.name = f"mm2-{action}" if process == MIRROR_MAKER else f"{process}-{action}"

    def _target(self, ctx: FaultContext) -> Any:
        p = ctx.processes.get(self.process)
        if p is None:
            raise RuntimeError(f"this run has no {self.process} process to {self.action}")
        return p

    def _inject(self, ctx: FaultContext) -> None:
        p = self._target(ctx)
        self.detail.update(process=self.process, container=p.name)
        if self.action == KILL:
            p.kill()
        else:
            p.pause()

    def _heal(self, ctx: FaultContext) -> None:
        p = self._target(ctx)
        if self.action == KILL:
            p.restart()
        else:
            p.unpause()


def process_words(name: str, targets: list[str], detail: dict[str, Any]) -> str:
    what = "MirrorMaker 2" if detail.get("process") == MIRROR_MAKER else detail.get("process")
    if name.endswith("-kill"):
        return f"{what} killed (SIGKILL); healed: started again with its configuration and offsets"
    return f"{what} frozen (docker pause); healed: unpaused"
