"""Auto-commit vs commit-after-processing consumers, each SIGKILLed mid-run and
restarted: the history shows the difference (skipped vs redelivered).

The parameters make the difference deterministic rather than likely: the
auto-commit member commits every 100 ms but flushes its history only every
30 s, so at the kill (a few seconds in) offsets are committed for records no
row says it received -> skipped. The commit-after-processing member flushes
every 200 ms and (by its commit interval) never commits before the kill, so
everything it recorded is re-read by its next incarnation -> redelivered,
and nothing is skipped."""
import json
import time

from confluent_kafka import Consumer, TopicPartition
from wl_history_check import redelivered, skipped, table

from core.history import part_files
from workloads.consumer import ConsumerGroup
from workloads.drain import drain
from workloads.producer import ProducerProcess
from workloads.spec import ConsumerGroupSpec, DrainSpec, ProducerSpec


def _consumed_by(run_dir: str, group: str) -> int:
    if not part_files(run_dir, "consumed"):
        return 0
    c = table(run_dir, "consumed")
    return len(c[c.group_id == group].drop_duplicates(["partition", "offset"]))


def _assigned(run_dir: str) -> set[str]:
    if not part_files(run_dir, "events"):
        return set()
    ev = table(run_dir, "events")
    reb = ev[ev.name == "rebalance"]
    # an empty assignment is none (a member that joined before it saw the topic)
    return {t for t, d in zip(reb.target, reb.detail)
            if json.loads(d)["type"] == "assigned" and json.loads(d)["partitions"]}


def _committed(bootstrap: str, topic: str, partitions: int, group: str) -> int:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "log_level": 0})
    try:
        tps = c.committed([TopicPartition(topic, p) for p in range(partitions)], timeout=10)
        return sum(max(tp.offset, 0) for tp in tps)
    finally:
        c.close()


def test_auto_commit_kill_skips_and_commit_after_processing_kill_redelivers(run):
    topic = run.topic(3)
    n = 16_000
    common = dict(topics=topic, members=1, session_timeout_ms=6000)
    auto = ConsumerGroup(ConsumerGroupSpec(group_id=f"{topic}-auto", name_prefix="a",
                                           commit="auto", auto_commit_interval_ms=100,
                                           history_flush_s=30, **common), run)
    after = ConsumerGroup(ConsumerGroupSpec(group_id=f"{topic}-after", name_prefix="b",
                                            commit="after-processing", commit_interval_ms=600_000,
                                            history_flush_s=0.2, **common), run)
    producer = ProducerProcess(ProducerSpec(name="p0", topic=topic, records=n, rate=2000), run)
    try:
        auto.start()
        after.start()
        # produce only once both members own their partitions, so the kill lands mid-stream
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and _assigned(run.dir) < {"a0", "b0"}:
            time.sleep(0.5)
        assert _assigned(run.dir) >= {"a0", "b0"}
        producer.start()
        # let both consume for a few seconds (the after group's rows show up on disk)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and _consumed_by(run.dir, after.spec.group_id) < 4000:
            time.sleep(0.5)
        assert _consumed_by(run.dir, after.spec.group_id) >= 4000
        # the premise of "skipped": the auto group has committed offsets the broker
        # holds (a slow first fetch on a busy machine once left it at none, CI stop 24)
        while time.monotonic() < deadline and _committed(run.bootstrap, topic, 3,
                                                         auto.spec.group_id) < 1000:
            time.sleep(0.5)
        assert _committed(run.bootstrap, topic, 3, auto.spec.group_id) >= 1000
        assert _consumed_by(run.dir, auto.spec.group_id) == 0     # nothing flushed yet
        auto.bounce("a0", clean=False)
        after.bounce("b0", clean=False)
        assert producer.wait(120) and producer.exitcode == 0
        # the after group flushes every 200 ms: wait until it has every record; the
        # auto group (30 s flush) is read from its history after its clean stop
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and _consumed_by(run.dir, after.spec.group_id) < n:
            time.sleep(0.5)
        # the auto group's progress is visible in its committed offsets
        while time.monotonic() < deadline and _committed(run.bootstrap, topic, 3,
                                                         auto.spec.group_id) < n:
            time.sleep(0.5)
        time.sleep(1)
    finally:
        auto.stop()
        after.stop()
        if producer.is_alive():
            producer.kill()
    r = drain(DrainSpec(topics=topic), run)
    assert r.complete and r.records == n, r

    consumed, commits = table(run.dir, "consumed"), table(run.dir, "commits")
    ga, gb = auto.spec.group_id, after.spec.group_id
    assert commits[commits.group_id == ga].ok.any() and commits[commits.group_id == gb].ok.any()
    assert skipped(consumed, commits, ga) > 0
    assert skipped(consumed, commits, gb) == 0
    assert redelivered(consumed, gb) > 0
    # the commit-after-processing group received every record at least once
    got = consumed[(consumed.group_id == gb) & (consumed.phase == "run")]
    assert len(got.drop_duplicates(["partition", "offset"])) == n

    ev = table(run.dir, "events")
    crashes = ev[ev.name == "consumer-crash"]
    assert set(crashes.target) == {"a0", "b0"}
    reb = [json.loads(d) for d in ev[ev.name == "rebalance"].detail]
    assert {d["type"] for d in reb} >= {"assigned"}
    assert {d["incarnation"] for d in reb if d["group_id"] == gb} == {0, 1}
