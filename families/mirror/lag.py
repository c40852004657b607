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
import uuid

from confluent_kafka import Consumer, TopicPartition

from core.history import EventLog, now_us

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
        # one consumer per cluster (a new client per sample cost seconds on a loaded
        # machine), made again after a failed sample: a client that timed out against a
        # killed or frozen leader may stay stuck on it
        clients = None
        try:
            while not self.stopped.wait(SAMPLE_S):
                ts = now_us()
                try:
                    clients = clients or self._clients()
                    rows = self._sample(*clients)
                except Exception as e:  # noqa: BLE001 - a cluster under faults: sample again
                    # said in the history (a failed sample is not a lag of 0)
                    self.events.emit("client", LAG_EVENT, "mm2", ts_us=ts, error=str(e)[:300])
                    _close(clients)
                    clients = None
                    continue
                self.events.emit("client", LAG_EVENT, "mm2", ts_us=ts, partitions=rows)
        finally:
            _close(clients)

    def _clients(self) -> tuple[Consumer, Consumer, list[tuple[str, int]]]:
        source, target = _consumer(self.source_bs), _consumer(self.target_bs)
        return source, target, _partitions(source, tuple(self.renamed))

    def _sample(self, source: Consumer, target: Consumer, parts) -> list[dict]:
        ends: dict[str, dict] = {"source": {}, "target": {}}
        for t, p in parts:
            ends["source"][(t, p)] = source.get_watermark_offsets(
                TopicPartition(t, p), timeout=2, cached=False)
            copy = self.renamed[t]
            ends["target"][(copy, p)] = target.get_watermark_offsets(
                TopicPartition(copy, p), timeout=2, cached=False)
        return lag_rows(ends["source"], ends["target"], self.renamed)


def _close(clients) -> None:
    for c in (clients or ())[:2]:
        try:
            c.close()
        except Exception:  # noqa: BLE001,S110 - closing a stuck client: nothing more to do
            pass


def _consumer(bootstrap: str) -> Consumer:
    return Consumer({"bootstrap.servers": bootstrap, "group.id": f"harness-lag-{uuid.uuid4().hex[:8]}",
                     "enable.auto.commit": False, "log_level": 0})


def _partitions(c: Consumer, topics: tuple[str, ...]) -> list[tuple[str, int]]:
    md = c.list_topics(timeout=10).topics
    return [(t, p) for t in topics for p in sorted(md[t].partitions)]


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
            parts = json.loads(e.get("detail") or "{}").get("partitions")
            if parts:                                    # a failed sample says nothing
                by[e["ts_us"] // 1_000_000] = sum(int(p["lag"]) for p in parts)
    return [{"second": s, "lag": by[s]} for s in sorted(by)]
