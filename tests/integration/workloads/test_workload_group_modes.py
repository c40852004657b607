"""A cooperative-sticky consumer group with static membership, one member
cleanly bounced mid-stream: the history shows incremental rebalances (no member
ever gives up everything it owns), the bounced member getting its own
partitions back with no rebalance of the others, and every record consumed.

c0 starts alone (it owns all partitions and leads the group), then c1 joins:
under cooperative-sticky c0 is revoked only what moves to c1 (an eager
protocol revokes all six first). c1 is then closed and restarted: a static
member's close sends no LeaveGroup, and its rejoin within the session timeout
with the same group.instance.id is handed its previous assignment, so c0 sees
no rebalance at all (a dynamic member would leave, c0 would take over its
partitions, then give them back). c1 is not the leader on purpose: a static
leader's rejoin may trigger a rebalance on some broker versions."""
import json
import time

from confluent_kafka.admin import AdminClient
from wl_history_check import table

from core.history import now_us, part_files
from workloads.consumer import ConsumerGroup, consumer_config
from workloads.producer import ProducerProcess
from workloads.spec import ConsumerGroupSpec, ProducerSpec

PARTITIONS = 6
N = 3000


def _rebalances(run_dir: str, group: str) -> list[dict]:
    """The group's rebalance events in time order: target, ts_us, type, incarnation, partitions."""
    if not part_files(run_dir, "events"):
        return []
    ev = table(run_dir, "events").sort_values("ts_us", kind="stable")
    out = []
    for target, ts, d in zip(ev.target, ev.ts_us, ev.detail):
        d = json.loads(d)
        if d.get("group_id") == group and d.get("type") in ("assigned", "revoked", "lost"):
            out.append({"target": target, "ts_us": int(ts), "type": d["type"],
                        "incarnation": d["incarnation"],
                        "partitions": {p for _, p in d["partitions"]}})
    return [r for r in out if r["target"] is not None]


def _owned(rebalances: list[dict], member: str, incarnation: int | None = None,
           before_us: int | None = None) -> set[int]:
    """Replay assigned/revoked (cooperative: both incremental) into what a member owns."""
    owned: set[int] = set()
    for r in rebalances:
        if r["target"] != member or (incarnation is not None and r["incarnation"] != incarnation):
            continue
        if before_us is not None and r["ts_us"] >= before_us:
            break
        if r["type"] == "assigned":
            owned |= r["partitions"]
        else:
            owned -= r["partitions"]
    return owned


def _wait(predicate, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.5)
    raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")


def _consumed(run_dir: str, group: str) -> set[str]:
    if not part_files(run_dir, "consumed"):
        return set()
    c = table(run_dir, "consumed")
    return set(c[(c.group_id == group) & (c.phase == "run")].record_id.dropna())


def test_cooperative_sticky_static_member_clean_bounce(run):
    topic = run.topic(PARTITIONS)
    group = f"{topic}-g"
    # a long session, so a restart on a loaded host stays well inside it
    spec = ConsumerGroupSpec(group_id=group, topics=topic, members=2,
                             assignment="cooperative-sticky", static_membership=True,
                             commit="after-processing", session_timeout_ms=45_000,
                             history_flush_s=0.2)
    # what the workload hands librdkafka
    conf = consumer_config(spec, "c1", run.bootstrap)
    assert conf["partition.assignment.strategy"] == "cooperative-sticky"
    assert conf["group.instance.id"] == f"{group}-c1"

    g = ConsumerGroup(spec, run)
    producer = ProducerProcess(ProducerSpec(name="p0", topic=topic, records=N, rate=500), run)
    everything = set(range(PARTITIONS))
    try:
        g.start_member("c0")
        _wait(lambda: _owned(_rebalances(run.dir, group), "c0") == everything, 60,
              "c0 to own every partition")
        g.start_member("c1")

        def split():
            reb = _rebalances(run.dir, group)
            c0, c1 = _owned(reb, "c0"), _owned(reb, "c1")
            return c0 and c1 and c0 | c1 == everything and not c0 & c1
        _wait(split, 60, "c0 and c1 to share the partitions")

        # the broker's view: the protocol it chose and the static ids it knows
        admin = AdminClient({"bootstrap.servers": run.bootstrap})
        desc = admin.describe_consumer_groups([group])[group].result(timeout=15)
        assert desc.partition_assignor == "cooperative-sticky"
        assert {m.group_instance_id for m in desc.members} == {f"{group}-c0", f"{group}-c1"}

        producer.start()
        _wait(lambda: len(_consumed(run.dir, group)) >= N // 5, 60, "the group to consume")
        reb = _rebalances(run.dir, group)
        c0_before, c1_before = _owned(reb, "c0"), _owned(reb, "c1")
        bounce_us = now_us()
        g.bounce("c1", clean=True)
        _wait(lambda: _owned(_rebalances(run.dir, group), "c1", incarnation=1), 60,
              "c1's new incarnation to be assigned")
        assert producer.wait(120) and producer.exitcode == 0
        produced = table(run.dir, "produced")
        acked = set(produced.loc[produced.status == "acked", "record_id"])
        assert len(acked) == N
        _wait(lambda: acked <= _consumed(run.dir, group), 90, "every acked record consumed")
        stop_us = now_us()
    finally:
        g.stop()
        if producer.is_alive():
            producer.kill()
    assert g.exitcode("c0") == 0 and g.exitcode("c1") == 0

    reb = [r for r in _rebalances(run.dir, group) if r["ts_us"] < stop_us]
    assert not [r for r in reb if r["type"] == "lost"], reb
    # (a) cooperative: when c1 joined, c0 was revoked only what moved, never everything
    # (under eager it is revoked all six, then assigned three back)
    c0_events = [r for r in reb if r["target"] == "c0"]
    owned: set[int] = set()
    revokes = 0
    for r in c0_events:
        if r["type"] == "assigned":
            owned |= r["partitions"]
        elif r["partitions"]:
            revokes += 1
            assert r["partitions"] < owned, (r, owned)     # a strict part of what it owned
            owned -= r["partitions"]
    assert revokes >= 1 and owned == c0_before, c0_events
    # (b) static membership: c0 saw no rebalance after the bounce, and c1's new
    # incarnation got exactly what its previous one owned
    after = [r for r in c0_events if r["ts_us"] >= bounce_us and r["partitions"]]
    assert after == [], after
    assert _owned(reb, "c1", incarnation=1) == c1_before
    assert _owned(reb, "c1", incarnation=0, before_us=bounce_us) == c1_before
    ev = table(run.dir, "events")
    assert ((ev.name == "consumer-close") & (ev.target == "c1")).sum() == 1
    # (c) at least once: every acked record was received by the group during the run
    consumed = table(run.dir, "consumed")
    got = consumed[(consumed.group_id == group) & (consumed.phase == "run")]
    assert acked <= set(got.record_id)
    assert len(got.drop_duplicates(["partition", "offset"])) >= N
