"""Replication lag over time: while the load runs, every SAMPLE_S a thread reads each
mirrored partition's end offset on the source and on the target (its mirrored copy)
and writes one `client` event `mirror-lag` with them. The lag of a partition at a
sample is source end − target end, not below 0: the records written to the source and
not yet appended to the target. (A record MM2 copied twice counts once too often on
the target, so after a duplicate the lag reads low by that many; MM2's own committed
offsets, the catch-up's measure, are flushed only every second, too coarse here.)
The family's metrics turn the samples into a series per second, drawn with the fault
bands (families/mirror/__init__.py).
"""
from __future__ import annotations

import json
import logging
import threading

from core.history import EventLog, now_us
from families.mirror.catchup import end_offsets

log = logging.getLogger("harness.mirror")
SAMPLE_S = 1.0
LAG_EVENT = "mirror-lag"


class LagSampler:
    def __init__(self, source_bs: str, target_bs: str, renamed: dict[str, str], events: EventLog):
        self.source_bs, self.target_bs, self.renamed, self.events = (
            source_bs, target_bs, renamed, events)
        self.stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, name="mirror-lag", daemon=True)

    def start(self) -> "LagSampler":
        self._thread.start()
        return self

    def stop(self) -> None:
        self.stopped.set()
        if self._thread.is_alive():
            self._thread.join(timeout=30)

    def _run(self) -> None:
        while not self.stopped.wait(SAMPLE_S):
            try:
                ts = now_us()
                source = end_offsets(self.source_bs, tuple(self.renamed))
                target = end_offsets(self.target_bs, tuple(self.renamed.values()))
            except Exception as e:  # noqa: BLE001 - a cluster under faults: sample again
                log.debug("mirror lag sample failed: %s", e)
                continue
            self.events.emit("client", LAG_EVENT, "mm2", ts_us=ts,
                             partitions=lag_rows(source, target, self.renamed))


def lag_rows(source: dict, target: dict, renamed: dict[str, str]) -> list[dict]:
    """Per source partition: its end offset, its copy's on the target, the lag (pure)."""
    rows = []
    for (t, p), (_, end) in sorted(source.items()):
        copy = target.get((renamed[t], p))
        copied = copy[1] if copy is not None else 0
        rows.append({"topic": t, "partition": p, "source_end": end, "target_end": copied,
                     "lag": max(0, end - copied)})
    return rows


def lag_series(events: list[dict]) -> list[dict]:
    """The samples as a series per second (epoch seconds): the summed lag over the
    mirrored partitions, the last sample of each second."""
    by: dict[int, int] = {}
    for e in events:
        if e.get("kind") == "client" and e.get("name") == LAG_EVENT:
            parts = json.loads(e.get("detail") or "{}").get("partitions") or []
            by[e["ts_us"] // 1_000_000] = sum(int(p["lag"]) for p in parts)
    return [{"second": s, "lag": by[s]} for s in sorted(by)]
