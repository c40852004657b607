"""The mirror family's parts that need no cluster: the exactly-once refusal by version,
MM2's properties as written from the section, MM2's offsets-topic records, and the
catch-up judgement per source partition."""
from __future__ import annotations

import json

import pytest
from test_fault_fakes import FakeProcess  # same dir: pytest puts it on sys.path

from clusters.spec import ClusterSpec
from core.errors import SpecError
from families.mirror.catchup import parse_offset_record, partition_rows
from families.mirror.checkpoints import Checkpoint, commit_rows, encode_checkpoint, parse_checkpoint
from families.mirror.failover import pair_rows, pending
from families.mirror.mm2 import properties
from families.mirror.section import check_mirror, exactly_once_refusal, mirror
from workloads.spec import ProducerSpec


def _resolved(raw: dict):
    spec, refusals = check_mirror(mirror(raw), ClusterSpec.kraft_combined("3.9", 3),
                                  {"orders": 3, "other": 1},
                                  [ProducerSpec(name="p0", topic="orders", duration_s=10)])
    assert refusals == []
    return spec


def test_exactly_once_is_refused_before_kip_710_and_allowed_after():
    problem, fix = exactly_once_refusal((3, 4, 1), "3.4.1")
    assert "3.4.1" in problem and "KIP-618" in problem and "exactly_once: false" in fix
    assert exactly_once_refusal((3, 5, 0), "3.5.0") is None
    assert exactly_once_refusal((4, 3, 1), "4.3.1") is None


def test_the_topics_default_to_the_producers_and_the_source_version_is_resolved():
    spec = _resolved({})
    assert spec.mirrored == ("orders",) and spec.source_version.startswith("3.9.")
    assert spec.target_version == spec.source_version


def test_a_target_brokers_beyond_three_is_refused_naming_the_field():
    with pytest.raises(Exception, match="brokers"):
        mirror({"target": {"brokers": 4}})


def test_a_mirrored_topic_not_in_the_scenario_is_refused_naming_its_index():
    _, refusals = check_mirror(mirror({"topics": ["orders", "nope"]}),
                               ClusterSpec.kraft_combined("3.9", 3), {"orders": 3}, [])
    assert refusals[0][0] == ("topics", 1)


def test_an_unknown_target_version_is_a_spec_error_under_target():
    _, refusals = check_mirror(mirror({"target": {"version": "2.8"}}),
                               ClusterSpec.kraft_combined("3.9", 3), {"orders": 3}, [])
    assert refusals[0][0] == ("target", "version")


def test_properties_copy_one_way_with_replication_fitting_the_target():
    spec = _resolved({"target": {"brokers": 1}, "topics": ["orders"],
                      "emit_checkpoints_interval_s": 2})
    p = properties(spec, "10.0.0.2:9092", "10.0.1.2:9092")
    assert p["source->target.enabled"] == "true" and p["target->source.enabled"] == "false"
    assert p["source->target.topics"] == "orders"
    assert p["replication.factor"] == "1" and p["offset.storage.replication.factor"] == "1"
    assert p["emit.checkpoints.interval.seconds"] == "2"
    assert p["sync.group.offsets.enabled"] == "true"
    assert "target.exactly.once.source.support" not in p


def test_properties_with_exactly_once_enable_it_on_the_target_with_internal_rest():
    p = properties(_resolved({"exactly_once": True}), "s:9092", "t:9092")
    assert p["target.exactly.once.source.support"] == "enabled"
    assert p["dedicated.mode.enable.internal.rest"] == "true"


def test_the_users_mm2_config_is_set_over_the_harnesss_and_owned_keys_are_refused():
    spec = _resolved({"mm2_config": {"target.scheduled.rebalance.max.delay.ms": 0,
                                     "emit.checkpoints.interval.seconds": 1,
                                     "target.producer.enable.idempotence": True}})
    p = properties(spec, "s:9092", "t:9092")
    assert p["target.scheduled.rebalance.max.delay.ms"] == "0"
    assert p["emit.checkpoints.interval.seconds"] == "1"          # over the harness's 5
    assert p["target.producer.enable.idempotence"] == "true"
    for owned in ("source.bootstrap.servers", "clusters", "source->target.topics",
                  "source->target.enabled", "target->source.enabled"):
        with pytest.raises(SpecError) as e:
            mirror({"mm2_config": {owned: "x"}})
        assert e.value.field == f"mm2_config.{owned}" and "target:" in e.value.fix
    with pytest.raises(SpecError) as e:         # not applied by MM2 without the prefix
        mirror({"mm2_config": {"scheduled.rebalance.max.delay.ms": 0}})
    assert e.value.fix == "write target.scheduled.rebalance.max.delay.ms"
    assert mirror({"mm2_config": {"target.scheduled.rebalance.max.delay.ms": 0}}).mm2_config == {
        "target.scheduled.rebalance.max.delay.ms": "0"}
    with pytest.raises(SpecError) as e:
        mirror({"mm2_config": {"tasks.max": [1, 2]}})
    assert e.value.field == "mm2_config.tasks.max"
    with pytest.raises(SpecError, match="mapping"):
        mirror({"mm2_config": ["tasks.max=2"]})


def test_offset_records_of_mm2_are_read_and_others_left_out():
    key = json.dumps(["MirrorSourceConnector", {"cluster": "source", "partition": 2,
                                                "topic": "orders"}]).encode()
    assert parse_offset_record(key, b'{"offset": 41}') == (("orders", 2), 41)
    assert parse_offset_record(key, None) == (("orders", 2), None)
    other = json.dumps(["MirrorCheckpointConnector", {"x": 1}]).encode()
    assert parse_offset_record(other, b'{"offset": 1}') is None
    assert parse_offset_record(b"not json", b"{}") is None


def test_a_partition_is_caught_up_when_mm2_committed_its_last_record():
    ends = {("orders", 0): (0, 100), ("orders", 1): (0, 100), ("orders", 2): (0, 0),
            ("orders", 3): (0, 50)}
    rows = {r["partition"]: r for r in partition_rows(
        ends, {("orders", 0): 99, ("orders", 1): 90})}
    assert rows[0]["caught_up"] and rows[0]["behind"] == 0
    assert not rows[1]["caught_up"] and rows[1]["behind"] == 9
    assert rows[2]["caught_up"]                        # empty: nothing to copy
    assert not rows[3]["caught_up"] and rows[3]["behind"] == 50   # MM2 committed nothing yet


def test_mirror_refuses_a_non_mapping():
    with pytest.raises(SpecError):
        mirror(["orders"])


class _Events:
    def __init__(self):
        self.names: list[str] = []

    def emit(self, kind, name, target, **detail):
        self.names.append(name)


def test_the_mm2_kill_kills_then_restarts_after_down_s():
    import time

    from families.mirror.kill import MirrorMakerKill
    from families.mirror.section import MirrorKill
    mm2, events = FakeProcess(), _Events()
    k = MirrorMakerKill(mm2, MirrorKill(at_s=0.05, down_s=0.1), events).start()
    time.sleep(0.5)
    k.cancel(restart=True)
    assert mm2.calls == ["kill", "restart"] and not k.down
    assert events.names == ["mirror-mm2-killed", "mirror-mm2-restarted"]


def test_a_cancel_while_mm2_is_down_restarts_it_only_when_asked():
    import time

    from families.mirror.kill import MirrorMakerKill
    from families.mirror.section import MirrorKill
    for restart, want in ((True, ["kill", "restart"]), (False, ["kill"])):
        mm2 = FakeProcess()
        k = MirrorMakerKill(mm2, MirrorKill(at_s=0.0, down_s=30), _Events()).start()
        time.sleep(0.2)
        k.cancel(restart=restart)
        assert mm2.calls == want and not k.down


def test_a_kill_not_played_before_the_cancel_never_plays():
    from families.mirror.kill import MirrorMakerKill
    from families.mirror.section import MirrorKill
    mm2 = FakeProcess()
    k = MirrorMakerKill(mm2, MirrorKill(at_s=30, down_s=1), _Events()).start()
    k.cancel(restart=True)
    assert mm2.calls == [] and not k.killed


def test_a_checkpoint_record_is_read_as_mm2_writes_it_and_garbage_is_not():
    # Kafka's Checkpoint: key group, topic (INT16-length strings), partition (INT32);
    # value version 0 (INT16), upstream, downstream (INT64), metadata (string)
    key = b"\x00\x02g0" + b"\x00\x0dsource.orders" + b"\x00\x00\x00\x02"
    value = b"\x00\x00" + (10412).to_bytes(8, "big") + (10094).to_bytes(8, "big") + b"\x00\x00"
    c = parse_checkpoint(key, value)
    assert c == Checkpoint("g0", "source.orders", 2, 10412, 10094)
    assert encode_checkpoint(c) == (key, value)
    assert parse_checkpoint(key, None) is None                         # a tombstone
    assert parse_checkpoint(key, b"\x00\x01" + value[2:]) is None       # an unknown version
    assert parse_checkpoint(b"\x00\x09g0", value) is None               # a length past the end
    src, dst = commit_rows(c, "orders", (0, 17), 5)
    assert (src["cluster"], src["topic"], src["offset"]) == ("source", "orders", 10412)
    assert (dst["cluster"], dst["topic"], dst["offset"]) == ("target", "source.orders", 10094)
    assert src["consumer"] == dst["consumer"] == "mm2-checkpoint:0:17"


def test_the_failover_waits_for_the_last_commit_checkpointed_then_synced():
    renamed = {"orders": "source.orders"}
    source = {("orders", 0): 120, ("orders", 1): 99}
    cps = {("g0", "source.orders", 0): (120, 118), ("g0", "source.orders", 1): (90, 88)}
    target = {("source.orders", 0): 110, ("source.orders", 1): 88}
    waiting = pending(source, cps, target, "g0", renamed)
    assert waiting == ["g0 source.orders-0: target offset 110, checkpoint says 118",
                       "g0 orders-1: commit 99 not checkpointed (last 90)"]
    cps[("g0", "source.orders", 1)] = (99, 97)
    target = {("source.orders", 0): 118, ("source.orders", 1): 97}
    assert pending(source, cps, target, "g0", renamed) == []
    rows = pair_rows("g0", source, {("source.orders", 0): 118}, renamed, 7)
    assert [(r["cluster"], r["topic"], r["partition"], r["offset"]) for r in rows] == \
        [("source", "orders", 0, 120), ("target", "source.orders", 0, 118)]  # no target offset: no pair
    assert {r["consumer"] for r in rows} == {"failover:g0:orders:0"}


def test_replication_lag_per_partition_and_per_second():
    import json as _json

    from families.mirror import _words, mirror_metrics
    from families.mirror.lag import lag_rows, lag_series
    renamed = {"orders": "source.orders"}
    rows = lag_rows({("orders", 0): (0, 120), ("orders", 1): (0, 50)},
                    {("source.orders", 0): (0, 100), ("source.orders", 1): (0, 52)}, renamed)
    assert [(r["partition"], r["lag"]) for r in rows] == [(0, 20), (1, 0)]   # a duplicate: not below 0
    events = [{"kind": "client", "name": "mirror-lag", "ts_us": s * 1_000_000 + 5,
               "detail": _json.dumps({"partitions": [{"lag": lag}]})}
              for s, lag in ((100, 3), (101, 40), (102, 0))]
    events.append({"kind": "client", "name": "mirror-lag", "ts_us": 103_000_000,
                   "detail": _json.dumps({"error": "KafkaError{_TIMED_OUT}"})})   # no lag of 0
    assert lag_series(events) == [{"second": 100, "lag": 3}, {"second": 101, "lag": 40},
                                  {"second": 102, "lag": 0}]
    config = {"kind": "client", "name": "mirror-config", "ts_us": 0, "detail": _json.dumps(
        {"source_version": "3.9.2", "target_version": "3.9.2", "exactly_once": False,
         "target_topics": renamed})}
    m = mirror_metrics([config, *events])
    [line] = _words({"mirror": m})
    assert "at most 40 records (median 3)" in line, line
    assert "(source end − target end)" in line


def test_with_exactly_once_the_lag_is_measured_from_mm2s_committed_offsets():
    """The target's end offsets count MM2's transaction markers (here 60 beyond the
    source's end: the end-offset lag reads 0); MM2's committed source offsets, written
    in the copies' transaction, say partition 0 has its records up to offset 89 copied
    (30 behind), partition 1 all (offset 49 of 50), partition 2 none yet (all 7)."""
    from families.mirror import _words
    from families.mirror.lag import lag_rows
    renamed = {"orders": "source.orders"}
    rows = lag_rows({("orders", 0): (0, 120), ("orders", 1): (0, 50), ("orders", 2): (3, 10)},
                    {("source.orders", 0): (0, 180), ("source.orders", 1): (0, 75)}, renamed,
                    committed={("orders", 0): 89, ("orders", 1): 49})
    assert [(r["partition"], r["committed"], r["lag"]) for r in rows] == [
        (0, 89, 30), (1, 49, 0), (2, None, 7)]
    assert rows[0]["target_end"] == 180                 # still said, not the measure
    [line] = _words({"mirror": {"exactly_once": True, "target_version": "4.3.1",
                                "source_version": "4.3.1", "caught_up": None,
                                "lag_per_second": [{"second": 1, "lag": 30}]}})
    assert "Replication lag (source end − MM2's committed source offsets)" in line, line


def test_a_run_whose_mm2_checkpointed_nothing_says_its_translations_were_not_judged():
    import json as _json

    from families.mirror import FAMILY, _words, mirror_metrics
    config = {"kind": "client", "name": "mirror-config", "ts_us": 0, "detail": _json.dumps(
        {"source_version": "3.9.2", "target_version": "4.3.1", "exactly_once": False,
         "target_topics": {"orders": "source.orders"}})}

    def caught(n: int) -> dict:
        return {"kind": "client", "name": "mirror-caught-up", "ts_us": 1, "detail": _json.dumps(
            {"caught_up": True, "waited_s": 0.5, "partitions": [], "checkpoints": n})}
    for n, said in ((0, "no checkpoint of the source's groups: no translated offset was judged"),
                    (6, "It emitted 6 checkpoints of the source's groups.")):
        m = mirror_metrics([config, caught(n)])
        [line] = _words({"mirror": m})
        assert said in line, line
        assert FAMILY.metrics(_RunEvents([config, caught(n)]))["counts"]["mirror_checkpoints"] == n


class _RunEvents:
    """What the family's metrics read of a run: its events."""
    def __init__(self, events: list[dict]):
        self.events = events


def test_a_translation_row_in_words_names_a_checkpoint_or_a_failover():
    from families.mirror.kinds import rewind_words, skip_words

    class Run:
        def at(self, us):
            return "+12.3 s"
    row = {"group_id": "g0", "topic": "orders", "partition": 2, "offset": 10100,
           "record_id": "p0-7", "target_topic": "source.orders", "target_offset": 10100,
           "committed_offset": 10094, "translated_offset": 10412, "checkpoint": "mm2-checkpoint:0:3",
           "checkpoint_records": 318, "explain_at_us": 1}
    said = skip_words(row, Run())
    assert said.startswith("group g0 on the target would resume at source.orders-2:10\u2009412 "
                           "(MirrorMaker 2's checkpoint at +12.3 s of its source commit "
                           "orders-2:10\u2009094); 318 records between its source commit and "
                           "that offset would be skipped"), said
    row.update(checkpoint="failover:g0:orders:2", committed_offset=10500, checkpoint_records=1)
    said = rewind_words(row, Run())
    assert said.startswith("group g0 failing over at +12.3 s resumed on the target at "
                           "source.orders-2:10\u2009412"), said
    assert "1 record it had consumed before that commit would be read again" in said


# MM2's log around a task Connect killed for good, as MM2 4.3.1 wrote it
# (benchmarks/evidence/mm2-eos-checkpoint-task-killed-by-target-pause/run/logs/mm2.log)
KILLED_TASK_LOG = """\
[2026-11-28 20:44:09,653] WARN [Worker clientId=source->target, groupId=source-mm2] Didn't reach end of config log quickly enough (org.apache.kafka.connect.runtime.distributed.DistributedHerder)
java.util.concurrent.TimeoutException
\tat org.apache.kafka.connect.util.ConvertingFutureCallback.get(ConvertingFutureCallback.java:124)
[2026-11-28 20:44:09,657] ERROR ExactlyOnceWorkerSourceTask{id=MirrorCheckpointConnector-0} Task threw an uncaught and unrecoverable exception. Task is being killed and will not recover until manually restarted (org.apache.kafka.connect.runtime.WorkerTask)
org.apache.kafka.connect.errors.ConnectException: Failed to read to end of config topic before performing zombie fencing
\tat org.apache.kafka.connect.runtime.distributed.DistributedHerder.doFenceZombieSourceTasks(DistributedHerder.java:1356)
Caused by: java.util.concurrent.TimeoutException
\t... 12 more
[2026-11-28 20:44:09,667] INFO refreshing consumer groups took 30 ms (org.apache.kafka.connect.mirror.Scheduler)
[2026-11-28 20:44:19,001] ERROR WorkerSourceTask{id=MirrorSourceConnector-0} Task threw an uncaught and unrecoverable exception. Task is being killed and will not recover until manually restarted (org.apache.kafka.connect.runtime.WorkerTask)
"""


def test_a_task_connect_killed_for_good_is_read_from_mm2s_log_and_named_in_the_report():
    import json as _json

    from families.mirror import FAMILY, _words, mirror_metrics
    from families.mirror.mm2 import task_failures
    failed = task_failures(KILLED_TASK_LOG)
    assert failed == [
        {"task": "MirrorCheckpointConnector-0", "at": "2026-11-28 20:44:09,657",
         "error": "org.apache.kafka.connect.errors.ConnectException: Failed to read to end of "
                  "config topic before performing zombie fencing "
                  "(Caused by: java.util.concurrent.TimeoutException)"},
        {"task": "MirrorSourceConnector-0", "at": "2026-11-28 20:44:19,001", "error": ""}]
    assert task_failures(KILLED_TASK_LOG.split("[2026-11-28 20:44:09,657]")[0]) == []  # a WARN is not one
    config = {"kind": "client", "name": "mirror-config", "ts_us": 0, "detail": _json.dumps(
        {"source_version": "3.9.2", "target_version": "4.3.1", "exactly_once": True,
         "target_topics": {"orders": "source.orders"}})}
    caught = {"kind": "client", "name": "mirror-caught-up", "ts_us": 1, "detail": _json.dumps(
        {"caught_up": True, "waited_s": 0.8, "partitions": [], "checkpoints": 0,
         "task_failures": failed[:1]})}
    lines = _words({"mirror": mirror_metrics([config, caught])})
    assert lines[1].startswith("1 MirrorMaker 2 task(s) failed and were never restarted"), lines
    assert "MirrorCheckpointConnector-0 at 2026-11-28 20:44:09,657: " in lines[1]
    assert "zombie fencing" in lines[1] and "restart MM2" in lines[1]
    assert FAMILY.metrics(_RunEvents([config, caught]))["counts"]["mirror_task_failures"] == 1
    # a run stored before the failures were recorded: none, and no words for them
    old = {**caught, "detail": _json.dumps({"caught_up": True, "waited_s": 0.8, "partitions": [],
                                            "checkpoints": 3})}
    assert len(_words({"mirror": mirror_metrics([config, old])})) == 1
    assert FAMILY.metrics(_RunEvents([config, old]))["counts"]["mirror_task_failures"] == 0
