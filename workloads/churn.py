"""A group's churn (`churn:` of a consumer group, a share group or a pipeline): one member
after another, round-robin, bounced (closed or killed, away `down_s`, a new instance
started) until the group stops. The group does the bouncing; this is only the clock.

The first bounce comes `first_s` after the group is at work (`ready`): a share group's
members can take 15 s to receive their first record (seen: a member killed before its
group had received anything, so the kill tested nothing).
"""
from __future__ import annotations

import threading
from collections.abc import Callable

from workloads.spec import ChurnSpec

READY_POLL_S = 0.5


class Churn:
    """`bounce(member, clean, down_s)` returns False when the group is stopping (the
    member stays down; the churn ends); an exception is reported with `on_error` and
    the churn goes on."""

    def __init__(self, spec: ChurnSpec, members: list[str], *, name: str,
                 bounce: Callable[[str, bool, float], bool | None],
                 on_error: Callable[[str, str], None], stopping: threading.Event,
                 ready: Callable[[], bool] = lambda: True):
        self.spec, self.members, self.name = spec, list(members), name
        self.bounce, self.on_error, self.stopping, self.ready = bounce, on_error, stopping, ready
        self.thread: threading.Thread | None = None

    def start(self) -> "Churn":
        self.thread = threading.Thread(target=self._loop, name=self.name, daemon=True)
        self.thread.start()
        return self

    def join(self, timeout: float) -> None:
        if self.thread is not None:
            self.thread.join(timeout)

    def _loop(self) -> None:
        while not self.ready():
            if self.stopping.wait(READY_POLL_S):
                return
        turn, wait = 0, self.spec.first_s
        while not self.stopping.wait(wait):
            member = self.members[turn % len(self.members)]
            turn += 1
            try:
                if self.bounce(member, self.spec.how == "clean", self.spec.down_s) is False:
                    return
            except Exception as e:  # noqa: BLE001 - one failed bounce must not end the churn
                self.on_error(member, f"{type(e).__name__}: {e}")
            wait = self.spec.every_s
