"""Replication lag over time: while the load runs, every SAMPLE_S a thread reads each
mirrored partition's end offset on the source and on the target (its mirrored copy)
and writes one `client` event `mirror-lag` with them. The lag of a partition at a
sample is source end − target end, not below 0: the records written to the source and
not yet appended to the target. (A record MM2 copied twice counts once too often on
the target, so after a duplicate the lag reads low by that many.)

With exactly-once support the target's end offsets count MM2's transaction markers too
(hundreds more than the records in a 30 s run: the lag read 0 most of the time), so
there the lag is measured from MM2's committed source offsets instead: its source
connector commits them in the same transaction as the copies (KIP-618), so a read_committed
reader of its offsets topic, kept open and read on from sample to sample, sees exactly
what the target holds committed: lag = source end − 1 − the committed offset of the last
record copied (catchup.py reads the same records at the drain).
The family's metrics turn the samples into a series per second, drawn with the fault
bands (families/mirror/__init__.py).
"""
from __future__ import annotations

import json
import logging
import threading
import time
import uuid

from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

from core.history import EventLog, now_us
from families.mirror.catchup import apply_offset_record

log = logging.getLogger("harness.mirror")
SAMPLE_S = 1.0
LAG_EVENT = "mirror-lag"


class LagSampler:
    """`offsets_topic`: MM2's offsets topic on the target, read for the lag when MM2 runs
    with exactly-once support (None: the end offsets are the measure)."""

    def __init__(self, source_bs: str, target_bs: str, renamed: dict[str, str], events: EventLog,
                 offsets_topic: str | None = None):
        self.source_bs, self.target_bs, self.renamed, self.events = (
            source_bs, target_bs, renamed, events)
        self.offsets = None if offsets_topic is None else CommittedOffsets(target_bs, offsets_topic)
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
            if self.offsets is not None:
                self.offsets.close()

    def _clients(self) -> tuple[Consumer, Consumer, list[tuple[str, int]]]:
        source, target = _consumer(self.source_bs), _consumer(self.target_bs)
        return source, target, _partitions(source, tuple(self.renamed))

    def _sample(self, source: Consumer, target: Consumer, parts) -> list[dict]:
        # MM2's committed offsets first, then the source's ends: a source end read after
        # them can only add records (the lag reads high by a few ms of load, never a false
        # 0; read the other way round, a slow sample read committed offsets past the end)
        committed = None if self.offsets is None else self.offsets.read_on()
        ends: dict[str, dict] = {"source": {}, "target": {}}
        for t, p in parts:
            ends["source"][(t, p)] = source.get_watermark_offsets(
                TopicPartition(t, p), timeout=2, cached=False)
            copy = self.renamed[t]
            ends["target"][(copy, p)] = target.get_watermark_offsets(
                TopicPartition(copy, p), timeout=2, cached=False)
        return lag_rows(ends["source"], ends["target"], self.renamed, committed)


class CommittedOffsets:
    """MM2's committed source offsets, (topic, partition) -> offset of the last record
    copied: its offsets topic on the target, read_committed, from the start and then on
    from where the last sample stopped."""

    def __init__(self, bootstrap: str, topic: str):
        self.bootstrap, self.topic = bootstrap, topic
        self.committed: dict[tuple[str, int], int] = {}
        self._consumer: Consumer | None = None

    def read_on(self, wait_s: float = 0.1) -> dict[tuple[str, int], int]:
        """What is committed now: the records since the last call, until a wait of
        `wait_s` brings none (a consume waits its whole timeout: a sample every second
        cannot give it more)."""
        c = self._consumer = self._consumer or self._assigned()
        deadline = time.monotonic() + 5 * wait_s    # MM2 commits more often than wait_s
        while batch := c.consume(1000, wait_s):
            for m in batch:
                if m.error() is None:
                    apply_offset_record(self.committed, m.key(), m.value())
            if time.monotonic() > deadline:
                break
        return dict(self.committed)

    def _assigned(self) -> Consumer:
        # fetches answered within 50 ms of a commit: what read_on finds is that fresh
        c = _consumer(self.bootstrap, {"isolation.level": "read_committed", "fetch.wait.max.ms": 50})
        try:
            parts = c.list_topics(self.topic, timeout=5).topics[self.topic].partitions
            if not parts:       # not made yet: this sample fails, the next asks again
                raise RuntimeError(f"{self.topic} has no partitions yet")
            c.assign([TopicPartition(self.topic, p, OFFSET_BEGINNING) for p in sorted(parts)])
            return c
        except Exception:
            c.close()
            raise

    def close(self) -> None:
        _close((self._consumer,))


def _close(clients) -> None:
    for c in (clients or ())[:2]:
        try:
            c.close()
        except Exception:  # noqa: BLE001,S110 - closing a stuck client: nothing more to do
            pass


def _consumer(bootstrap: str, conf: dict | None = None) -> Consumer:
    return Consumer({"bootstrap.servers": bootstrap, "group.id": f"harness-lag-{uuid.uuid4().hex[:8]}",
                     "enable.auto.commit": False, "log_level": 0, **(conf or {})})


def _partitions(c: Consumer, topics: tuple[str, ...]) -> list[tuple[str, int]]:
    md = c.list_topics(timeout=10).topics
    return [(t, p) for t in topics for p in sorted(md[t].partitions)]


def lag_rows(source: dict, target: dict, renamed: dict[str, str],
             committed: dict[tuple[str, int], int] | None = None) -> list[dict]:
    """Per source partition: its end offset, its copy's on the target, the lag (pure).
    `committed` (exactly-once support): MM2's committed source offsets, the lag's measure
    (the records after the last one copied; a partition with none copied yet: all of its
    records), each row saying it in `committed`."""
    rows = []
    for (t, p), (low, end) in sorted(source.items()):
        copy = target.get((renamed[t], p))
        copied = copy[1] if copy is not None else 0
        row = {"topic": t, "partition": p, "source_end": end, "target_end": copied,
               "lag": max(0, end - copied)}
        if committed is not None:
            done = committed.get((t, p))
            row["committed"] = done
            row["lag"] = max(0, end - low if done is None else end - 1 - done)
        rows.append(row)
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
