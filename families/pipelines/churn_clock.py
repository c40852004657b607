"""When a pipeline's churn may start: once its first victim has an output committed.

A kill of an instance that has committed nothing moves no state (no task carries a
count to its next owner), and the run then fails `pipeline_handovers > 0 when
pipeline_churned`. How long an instance takes to commit its first output depends on
the machine, not the scenario: Kafka Streams took 10 s to its first assignment in one
CI run and 3 s here; librdkafka's processors once took more than 9 s. So the churn's
`first_s` counts from the moment the churn's first victim (its first slot) has an
output committed, seen by a read_committed reader of the output topic that joins no
group and commits nothing, or from FIRST_OUTPUT_MAX_S after the start, whichever
comes first (a victim that never commits, e.g. an idle Streams instance, must not
hold the churn off for the whole run: its kill then fails the run as planned).
"""
from __future__ import annotations

import time

from confluent_kafka import Consumer, TopicPartition

from workloads.records import pipeline_output_of

FIRST_OUTPUT_MAX_S = 60.0
READ_BATCH = 500


class FirstOutputWatch:
    """`__call__` (the churn's `ready`): True once `victim` has a committed output in
    `topic`, or `max_s` after the watch began; `waited` says which and how long."""

    def __init__(self, consumer_config: dict, topic: str, victim: str,
                 max_s: float = FIRST_OUTPUT_MAX_S):
        self.config, self.topic, self.victim, self.max_s = consumer_config, topic, victim, max_s
        self.began = time.monotonic()
        self.reader: Consumer | None = None
        self.writers: set[str] = set()       # instances with a committed output seen
        self.done: dict | None = None        # what the clock waited for, once it started

    def __call__(self) -> bool:
        if self.done is not None:
            return True
        waited = time.monotonic() - self.began
        try:
            self._read()
        except Exception as e:  # noqa: BLE001 - the clock then runs from max_s, said
            self._finish(error=f"{type(e).__name__}: {e}")
            return True
        if self.victim in self.writers or waited >= self.max_s:
            self._finish()
        return self.done is not None

    def _read(self) -> None:
        if self.reader is None:
            self.reader = Consumer({**self.config, "enable.auto.commit": False,
                                    "isolation.level": "read_committed"})
            parts = self.reader.list_topics(self.topic, timeout=10).topics[self.topic].partitions
            self.reader.assign([TopicPartition(self.topic, p, 0) for p in sorted(parts)])
        for m in self.reader.consume(READ_BATCH, 0.2):
            if m.error() is None and m.value() is not None:
                instance = pipeline_output_of(m.value())[2]
                if instance is not None:
                    self.writers.add(instance)

    def seen(self) -> dict:
        """What the clock has seen so far (an event's detail)."""
        return {"waited_s": round(time.monotonic() - self.began, 1), "victim": self.victim,
                "victim_had_output": self.victim in self.writers,
                "instances_with_output": sorted(self.writers)}

    def _finish(self, error: str | None = None) -> None:
        self.done = self.seen()
        if error is not None:
            self.done["error"] = error
        self.close()

    def close(self) -> None:
        """Idempotent; called by the churn's thread when it starts, or by the stop once
        that thread has ended."""
        if self.reader is not None:
            reader, self.reader = self.reader, None
            reader.close()
