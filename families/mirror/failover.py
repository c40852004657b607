"""Consumer groups failing over to the target (the section's `failover: true`), at the
mirror drain: the scenario's groups have stopped on the source (workloads-stop), MM2
has caught up, and a group now resumes on the target where MM2's group offset sync put
it, as an operator's failover would.

1. Each group's committed offsets on the source (its last commits) are read.
2. The wait: until MM2 has checkpointed each of those commits (a checkpoint whose
   upstream offset is the commit) and synced the translation to the target's
   `__consumer_offsets` (the group's committed offset on the target is that
   checkpoint's downstream offset); or until MM2's checkpoints and the target's group
   offsets have not changed for two checkpoint intervals (`settled`: MM2 emits a
   checkpoint only when the translated offset moves on, so a last commit that
   translates as the one before is never checkpointed: seen on a 3.9 run, the wait
   for it timed out); at most `timeout_s`.
3. Each (group, partition) pair is written as two `commits` rows, as a checkpoint is
   (checkpoints.py): `cluster = 'source'`, the source commit, and `cluster = 'target'`,
   the offset the group resumes at on the target, paired by `consumer =
   'failover:<group>:<topic>:<partition>'`; the checker judges them as it judges a
   checkpoint (translation_skip, translation_rewind).
4. The group then reads the target from there (a consumer of the group subscribed to
   the mirrored topics, no commit) until every partition's end: `consumed` rows with
   cluster = target, phase `run`, consumer `failover-<group>`.
"""
from __future__ import annotations

import time

from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, KafkaError, TopicPartition
from confluent_kafka.admin import AdminClient

from core.history import HistoryWriter, now_us
from families.mirror.catchup import read_whole
from families.mirror.checkpoints import checkpoints_topic, parse_checkpoint
from families.mirror.section import SOURCE, TARGET
from workloads.records import record_id_of

WAIT_POLL_S = 1.0
FAILOVER_CONSUMER = "failover"


def group_offsets(bootstrap: str, group: str, topics: set[str]) -> dict[tuple[str, int], int]:
    """The group's committed offsets on a cluster, of `topics` ((topic, partition) ->
    offset; a partition it never committed is absent)."""
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    futures = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)],
                                                request_timeout=10)
    result = futures[group].result(timeout=15)
    return {(tp.topic, tp.partition): tp.offset for tp in result.topic_partitions or ()
            if tp.topic in topics and tp.offset >= 0}


def latest_checkpoints(bootstrap: str, isolation: str) -> dict[tuple[str, str, int], tuple[int, int]]:
    """(group, target topic, partition) -> (upstream, downstream) of MM2's last checkpoint."""
    out = {}
    for _, _, _, key, value in read_whole(bootstrap, checkpoints_topic(), isolation):
        c = parse_checkpoint(key, value)
        if c is not None:
            out[(c.group, c.topic, c.partition)] = (c.upstream, c.downstream)
    return out


def pending(source: dict, checkpoints: dict, target: dict, group: str,
            renamed: dict[str, str]) -> list[str]:
    """What the failover still waits for, in words (pure: unit-tested): a source commit
    MM2 has not checkpointed yet, or a checkpoint not yet synced to the target group."""
    out = []
    for (topic, p), committed in sorted(source.items()):
        copy = renamed[topic]
        up, down = checkpoints.get((group, copy, p), (None, None))
        if up != committed:
            out.append(f"{group} {topic}-{p}: commit {committed} not checkpointed (last {up})")
        elif target.get((copy, p)) != down:
            out.append(f"{group} {copy}-{p}: target offset {target.get((copy, p))}, "
                       f"checkpoint says {down}")
    return out


def pair_rows(group: str, source: dict, target: dict, renamed: dict[str, str],
              ts_us: int) -> list[dict]:
    """The commits rows of each (group, partition) the group resumes on the target."""
    rows = []
    for (topic, p), committed in sorted(source.items()):
        resumed = target.get((renamed[topic], p))
        if resumed is None:
            continue
        common = {"consumer": f"{FAILOVER_CONSUMER}:{group}:{topic}:{p}", "group_id": group,
                  "partition": p, "ok": True, "error": None, "ts_us": ts_us}
        rows += [{**common, "cluster": SOURCE, "topic": topic, "offset": committed},
                 {**common, "cluster": TARGET, "topic": renamed[topic], "offset": resumed}]
    return rows


class Failover:
    """The failover of the scenario's groups (those reading mirrored topics)."""

    def __init__(self, ctx, source_bs: str, target_bs: str, groups: dict[str, set[str]],
                 renamed: dict[str, str], isolation: str, timeout_s: float, interval_s: float):
        self.ctx, self.source_bs, self.target_bs = ctx, source_bs, target_bs
        self.groups, self.renamed, self.isolation = groups, renamed, isolation
        self.timeout_s = timeout_s
        # MM2 emits a checkpoint only when the translated offset moves on (its checkpoints
        # are monotonic): a last commit whose translation equals the last checkpoint's is
        # never checkpointed. Nothing new for two checkpoint intervals: it has said all
        self.settle_s = max(2 * interval_s, 5.0) + 2.0
        self.report: dict = {}

    def run(self) -> dict:
        started = time.monotonic()
        source = {g: group_offsets(self.source_bs, g, topics) for g, topics in self.groups.items()}
        last, since = None, started
        while True:
            cps = latest_checkpoints(self.target_bs, self.isolation)
            target = {g: group_offsets(self.target_bs, g, {self.renamed[t] for t in topics})
                      for g, topics in self.groups.items()}
            waiting = [w for g in self.groups
                       for w in pending(source[g], cps, target[g], g, self.renamed)]
            now = time.monotonic()
            if (cps, target) != last:
                last, since = (cps, target), now
            settled = now - since >= self.settle_s
            if not waiting or settled or now - started >= self.timeout_s:
                break
            time.sleep(WAIT_POLL_S)
        ts = now_us()
        with HistoryWriter(self.ctx.run_dir, "commits", self.ctx.run_id,
                           writer_name="mm2-failover") as w:
            for g in self.groups:
                w.extend(pair_rows(g, source[g], target[g], self.renamed, ts))
        read = {g: self._consume(g, target[g]) for g in self.groups}
        return {"synced": not waiting, "settled": settled and bool(waiting),
                "waited_s": round(now - started, 2), "waiting": waiting[:10],
                "groups": {g: {"source": _named(source[g]), "target": _named(target[g]),
                               "read": read[g]} for g in self.groups}}

    def _consume(self, group: str, resumed: dict) -> int:
        """The group reads the target from where it resumes, to each partition's end
        now; its deliveries are `consumed` rows (cluster target, phase run; one
        member subscribed once: assignment 0)."""
        topics = sorted({self.renamed[t] for t in self.groups[group]})
        c = Consumer({"bootstrap.servers": self.target_bs, "group.id": group,
                      "enable.auto.commit": False, "auto.offset.reset": "earliest",
                      "isolation.level": self.isolation, "enable.partition.eof": True,
                      "log_level": 0})
        name, n = f"{FAILOVER_CONSUMER}-{group}", 0
        try:
            ends = {(t, p): c.get_watermark_offsets(TopicPartition(t, p), timeout=10,
                                                    cached=False)[1]
                    for t in topics for p in c.list_topics(t, timeout=10).topics[t].partitions}
            todo = {tp for tp, end in ends.items() if end > resumed.get(tp, 0)}
            c.subscribe(topics)
            deadline = time.monotonic() + self.timeout_s
            with HistoryWriter(self.ctx.run_dir, "consumed", self.ctx.run_id,
                               writer_name=name) as w:
                while todo and time.monotonic() < deadline:
                    for m in c.consume(500, 0.5):
                        tp = (m.topic(), m.partition())
                        if m.error() is not None:
                            eof = m.error().code() == KafkaError._PARTITION_EOF
                            if eof and m.offset() >= ends.get(tp, 0):
                                todo.discard(tp)
                            continue
                        w.append({"consumer": name, "group_id": group, "phase": "run",
                                  "topic": m.topic(), "partition": m.partition(),
                                  "offset": m.offset(), "record_id": record_id_of(m.value()),
                                  "isolation": self.isolation, "recv_ts_us": now_us(),
                                  "poll_seq": n, "assignment": 0, "cluster": TARGET})
                        n += 1
                        if m.offset() >= ends.get(tp, 0) - 1:
                            todo.discard(tp)
        finally:
            c.close()
        return n


def _named(offsets: dict) -> dict[str, int]:
    return {f"{t}-{p}": o for (t, p), o in sorted(offsets.items())}
