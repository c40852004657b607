"""The section's `kill`: MirrorMaker 2 killed once (SIGKILL) and started again, in a
thread of its own; cancelled (and joined) before MM2 is removed, so it never starts a
container that is being removed."""
from __future__ import annotations

import threading

from core.history import EventLog
from families.mirror.mm2 import MirrorMaker
from families.mirror.section import KILL_EVENT, RESTART_EVENT, MirrorKill


class MirrorMakerKill:
    def __init__(self, mm2: MirrorMaker, kill: MirrorKill, events: EventLog):
        self.mm2, self.kill, self.events = mm2, kill, events
        self.cancelled = threading.Event()
        self.killed = self.restarted = False
        self._lock = threading.Lock()        # a restart and a cancel never cross
        self._thread = threading.Thread(target=self._run, name="mirror-mm2-kill", daemon=True)

    @property
    def down(self) -> bool:
        """MM2 is down on purpose now (check() lets it be)."""
        return self.killed and not self.restarted

    def start(self) -> "MirrorMakerKill":
        self._thread.start()
        return self

    def _run(self) -> None:
        if self.cancelled.wait(self.kill.at_s):
            return
        with self._lock:
            if self.cancelled.is_set():
                return
            self.mm2.kill()
            self.killed = True
            self.events.emit("client", KILL_EVENT, "mm2", container=self.mm2.name,
                             down_s=self.kill.down_s)
        if not self.cancelled.wait(self.kill.down_s):
            self._restart("after down_s")

    def _restart(self, why: str, cancelling: bool = False) -> None:
        with self._lock:
            if self.cancelled.is_set() and not cancelling:
                return                       # cancel() decides
            if self.killed and not self.restarted:
                self.mm2.restart()
                self.restarted = True
                self.events.emit("client", RESTART_EVENT, "mm2", container=self.mm2.name, why=why)

    def cancel(self, restart: bool) -> None:
        """No kill from now on; `restart`: a killed MM2 still down is started now (the
        drain needs it to catch up), else left down (it is being removed)."""
        self.cancelled.set()
        if restart:
            self._restart("the drain began while it was down", cancelling=True)
        else:
            with self._lock:
                self.restarted = self.restarted or self.killed    # nothing to start again
        if self._thread.is_alive():
            self._thread.join(timeout=30)
