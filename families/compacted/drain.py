"""The pieces of the compacted drain (clients.py says how they fit): the roll record per
partition, and the wait for the log cleaner's checkpoint on each partition's leader."""
from __future__ import annotations

import logging
import time

from confluent_kafka import Producer

from clusters.config import LOG_DIR
from core.context import RunContext
from core.errors import HarnessError

ROLL_KEY = b"harness.roll"
CHECKPOINT = f"{LOG_DIR}/cleaner-offset-checkpoint"
WAIT_POLL_S = 1.0
PROGRESS_EVERY_S = 10.0
log = logging.getLogger("harness.compacted")


def parse_checkpoint(text: str) -> dict[tuple[str, int], int]:
    """Kafka's cleaner-offset-checkpoint: a version line, a count line, then one
    `topic partition offset` line per partition (the first offset not yet cleaned)."""
    lines = [ln.split() for ln in text.strip().splitlines()]
    if len(lines) < 2 or lines[0] != ["0"]:
        return {}
    out = {}
    for parts in lines[2:]:
        if len(parts) == 3 and parts[1].isdigit() and parts[2].isdigit():
            out[(parts[0], int(parts[1]))] = int(parts[2])
    return out


def roll_partitions(ctx: RunContext, topic: str, timeout_s: float = 60.0) -> dict[int, int]:
    """One roll record per partition (segment.ms has passed: it starts a new segment);
    partition -> its offset, below which every record of the workload lies."""
    producer = Producer({"bootstrap.servers": ctx.bootstrap, "acks": "all",
                         "enable.idempotence": True, **ctx.client_config})
    parts = sorted(producer.list_topics(topic, timeout=10).topics[topic].partitions)
    offsets: dict[int, int] = {}
    errors: dict[int, str] = {}

    def done(err, msg) -> None:
        if err is None:
            offsets[msg.partition()] = msg.offset()
        else:
            errors[msg.partition()] = err.name()

    for p in parts:
        producer.produce(topic, b"harness.roll", ROLL_KEY, partition=p, on_delivery=done)
    left = producer.flush(timeout_s)
    if left or len(offsets) < len(parts):
        raise HarnessError(f"compacted drain: the roll records of {topic} were not acknowledged "
                           f"({errors or 'timed out'}): the cleaner's progress cannot be judged")
    return offsets


class CleanerWait:
    """Until the cleaner's checkpoint on each partition's leader reaches its roll offset,
    or timeout_s; `partitions`: what it saw, per partition."""

    def __init__(self, ctx: RunContext, topic: str, rolls: dict[int, int], timeout_s: float):
        self.ctx, self.topic, self.rolls, self.timeout_s = ctx, topic, rolls, timeout_s
        self.partitions: list[dict] = []
        self.waited_s = 0.0

    def _replicas(self) -> dict[int, tuple[int, list[int]]]:
        md = Producer({"bootstrap.servers": self.ctx.bootstrap, **self.ctx.client_config})
        topic = md.list_topics(self.topic, timeout=10).topics[self.topic]
        return {p: (m.leader, list(m.replicas)) for p, m in topic.partitions.items()}

    def _checkpoints(self, brokers: set[int]) -> dict[int, dict]:
        cluster = self.ctx.cluster
        if cluster is None or not hasattr(cluster, "broker"):
            raise HarnessError("the compacted drain reads the cleaner's checkpoint with docker "
                               "exec: an external cluster is not supported")
        out = {}
        for b in brokers:
            try:
                r = cluster.broker(b).exec(f"cat {CHECKPOINT} 2>/dev/null || true")
                out[b] = parse_checkpoint(r.output)
            except Exception:  # noqa: BLE001 - a broker down now: its checkpoint unknown
                out[b] = {}
        return out

    def _snapshot(self) -> list[dict]:
        replicas = self._replicas()
        cps = self._checkpoints({b for _, rs in replicas.values() for b in rs})
        rows = []
        for p, roll in sorted(self.rolls.items()):
            leader, rs = replicas.get(p, (-1, []))
            per = {str(b): cps.get(b, {}).get((self.topic, p)) for b in rs}
            cleaned = per.get(str(leader))
            rows.append({"partition": p, "roll_offset": roll, "leader": leader,
                         "cleaned_to": cleaned, "replicas": per,
                         "passed": cleaned is not None and cleaned >= roll})
        return rows

    def run(self) -> bool:
        started = time.monotonic()
        last_said = started
        while True:
            self.partitions = self._snapshot()
            self.waited_s = round(time.monotonic() - started, 2)
            left = [r for r in self.partitions if not r["passed"]]
            if not left or self.waited_s >= self.timeout_s:
                break
            if time.monotonic() - last_said >= PROGRESS_EVERY_S:
                last_said = time.monotonic()
                self._progress(left)
            time.sleep(WAIT_POLL_S)
        for r in self.partitions:
            r["waited_s"] = self.waited_s
        return not left

    def _progress(self, left: list[dict]) -> None:
        words = ", ".join(f"{self.topic}-{r['partition']} at {r['cleaned_to']} of {r['roll_offset']}"
                          for r in left[:4])
        log.warning("compacted drain: waited %.0f s of %.0f s for the cleaner; %d partitions "
                    "left (%s)", self.waited_s, self.timeout_s, len(left), words)
        self.ctx.events.emit("client", "compacted-clean-wait", self.topic, waited_s=self.waited_s,
                             left=[{k: r[k] for k in ("partition", "roll_offset", "cleaned_to")}
                                   for r in left])
