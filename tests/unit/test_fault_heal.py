"""Fault bookkeeping and heal idempotence against fake nodes."""
import json
import os
import random
import signal

import pytest
from test_fault_fakes import FakeCluster

from clusters.api import ExecResult, PartitionState
from core.history import EventLog, read_table
from faults import selectors as sel
from faults.base import BaseFault, FaultContext, FaultError
from faults.controller import ControllerFailover
from faults.disk import DiskFull, UnwritableLogDir, filler_path
from faults.healall import heal_all, heal_all_on_exit, leftovers
from faults.pause import DOCKER, SIGSTOP, Pause
from faults.process import CLEAN, HARD, Bounce, Kill
from faults.zookeeper import ZkSessionExpiry


@pytest.fixture
def ctx(tmp_path):
    cluster = FakeCluster(tmp_path / "c", brokers=3)
    cluster.partition_states = [PartitionState("t", 0, 1, (1, 2, 3), (1, 2, 3))]
    # Every fake node has its own log dir; a shared relative layout keeps one ctx.log_dir.
    for n in cluster.nodes():
        n.log_dir = str(tmp_path / "c" / n.name / "data")
    events = EventLog(tmp_path / "run", "r1")
    c = FaultContext(cluster=cluster, events=events, rng=random.Random(0),
                     log_dir=str(tmp_path / "c" / "kafka-1" / "data"))
    yield c
    events.close()


def event_rows(ctx):
    ctx.events.flush()
    rows = read_table(ctx.events._writer.dir.parent.parent, "events").to_pylist()
    return [dict(r, detail=json.loads(r["detail"])) for r in rows]


def test_fault_and_heal_rows_share_fault_id_and_detail(ctx):
    f = Kill(sel.leader_of("t", 0), HARD)
    f.inject(ctx)
    f.heal(ctx)
    f.heal(ctx)
    rows = event_rows(ctx)
    assert [r["kind"] for r in rows] == ["fault", "heal"]
    fault, heal = rows
    assert fault["detail"]["fault_id"] == heal["detail"]["fault_id"] == f.fault_id
    assert fault["name"] == heal["name"] == "kill"
    assert fault["target"] == heal["target"] == "kafka-1"
    # the fault row also says how long its inject took; the heal row how long it lasted
    assert {k: v for k, v in heal["detail"].items() if k != "duration_s"} == \
        {k: v for k, v in fault["detail"].items() if k != "inject_s"}
    assert fault["detail"]["inject_s"] >= 0
    assert fault["detail"]["signal"] == "SIGKILL"


def test_kill_and_restart(ctx):
    node = ctx.cluster.node(1)
    f = Kill(sel.node(1), HARD)
    f.inject(ctx)
    assert not node.is_running() and node.calls == ["kill SIGKILL"]
    f.heal(ctx)
    f.heal(ctx)
    assert node.is_running() and node.calls == ["kill SIGKILL", "start"]
    assert not ctx.active


def test_terminate_uses_a_clean_stop_and_restart_after(ctx):
    node = ctx.cluster.node(2)
    Kill(sel.node(2), CLEAN, restart_after_s=0).inject(ctx)
    assert node.calls == ["stop", "start"] and node.is_running()
    assert [r["kind"] for r in event_rows(ctx)] == ["fault", "heal"]


def test_bounce_follows_the_leader(ctx):
    def move_leader_to_2(*a, **k):
        ctx.cluster.partition_states = [PartitionState("t", 0, 2, (1, 2, 3), (1, 2, 3))]
    ctx.cluster.node(1).start = (lambda orig: lambda: (orig(), move_leader_to_2()))(
        ctx.cluster.node(1).start)
    f = Bounce(sel.leader_of("t", 0), HARD, times=2, interval_s=0, reselect=True)
    f.inject(ctx)
    assert f.detail["rounds"] == [["kafka-1"], ["kafka-2"]]
    assert all(n.is_running() for n in ctx.cluster.nodes())
    f.heal(ctx)


def test_heal_before_inject_and_twice_is_a_no_op(ctx):
    for f in (Kill(sel.node(1)), Pause(sel.node(1)), DiskFull(sel.node(1)),
              UnwritableLogDir(sel.node(1)), ControllerFailover("kill")):
        f.heal(ctx)
    assert ctx.cluster.node(1).calls == []
    assert event_rows(ctx) == []


@pytest.mark.parametrize("method", [DOCKER, SIGSTOP])
def test_pause_heal_is_idempotent(ctx, method):
    node = ctx.cluster.node(3)
    f = Pause(sel.node(3), method)
    f.inject(ctx)
    assert node.paused if method == DOCKER else node.java_stopped()
    f.heal(ctx)
    f.heal(ctx)
    assert not node.paused and not node.java_stopped()
    assert leftovers(ctx) == []


def test_disk_full_fills_then_frees(ctx):
    node = ctx.cluster.node(1)
    f = DiskFull(sel.node(1))
    f.inject(ctx)
    assert os.path.exists(filler_path(ctx.log_dir))
    assert any("disk filler" in x for x in leftovers(ctx))
    f.heal(ctx)
    f.heal(ctx)
    assert not os.path.exists(filler_path(ctx.log_dir))
    assert f.heal_notes["broker_running_at_heal"] == {"kafka-1": True}
    assert node.is_running()


def test_disk_full_heal_starts_a_broker_that_halted(ctx):
    node = ctx.cluster.node(1)
    f = DiskFull(sel.node(1))
    f.inject(ctx)
    node.kill()                                  # the broker halts on its failed log dir
    f.heal(ctx)
    assert node.is_running()
    assert f.heal_notes["broker_running_at_heal"] == {"kafka-1": False}


def test_a_broker_that_dies_while_its_disk_fills_is_the_fault_taking_effect(ctx):
    # A ZooKeeper nemesis's disk-full-leader: the broker died during the fill, the
    # exec with it (exit 137, no output), and asking df next was a Docker 409.
    node = ctx.cluster.node(1)
    exec_in_container = node.exec

    def exec_dying_at_fill(cmd, user="root"):
        result = exec_in_container(cmd, user)
        if "dd if=/dev/zero" in cmd[-1]:
            node.running = False
            return ExecResult(137, "")
        return result
    node.exec = exec_dying_at_fill
    f = DiskFull(sel.node(1))
    f.inject(ctx)
    assert f.detail["down_at_fill"] == ["kafka-1"] and "inject_error" not in f.detail
    node.exec = exec_in_container
    f.heal(ctx)
    assert node.is_running() and not os.path.exists(filler_path(ctx.log_dir))


def test_disk_full_refuses_a_disk_that_does_not_fill(ctx, tmp_path):
    ctx.cluster.node(1).fake_bin.joinpath("df").write_text(
        "#!/bin/sh\necho h\necho 'tmpfs 9 9 999999 1% /x'\n")
    f = DiskFull(sel.node(1))
    with pytest.raises(FaultError, match="size-limited tmpfs"):
        f.inject(ctx)
    f.heal(ctx)                                   # half-done inject: heal removes the filler
    assert not os.path.exists(filler_path(ctx.log_dir)) and not ctx.active


def test_unwritable_log_dir_refuses_root_and_restores_mode(ctx):
    node = ctx.cluster.node(1)
    os.makedirs(os.path.join(ctx.log_dir, "t-0"), exist_ok=True)
    (node.state_dir / "java_user").write_text("root\n")
    f = UnwritableLogDir(sel.node(1))
    with pytest.raises(FaultError, match="runs as root"):
        f.inject(ctx)
    f.heal(ctx)
    (node.state_dir / "java_user").write_text("kafka\n")
    mode = oct(os.stat(ctx.log_dir).st_mode & 0o777)
    f = UnwritableLogDir(sel.node(1))
    f.inject(ctx)
    assert os.stat(ctx.log_dir).st_mode & 0o222 == 0
    assert os.stat(os.path.join(ctx.log_dir, "t-0")).st_mode & 0o222 == 0
    f.heal(ctx)
    f.heal(ctx)
    assert oct(os.stat(ctx.log_dir).st_mode & 0o777) == mode


def test_controller_failover_records_the_new_controller(ctx):
    ctx.cluster.controller_id = 1
    old_kill = ctx.cluster.node(1).kill

    def kill_and_elect(signal="SIGKILL"):
        old_kill(signal)
        ctx.cluster.controller_id = 3
    ctx.cluster.node(1).kill = kill_and_elect
    f = ControllerFailover("kill", wait_for_new_s=5)
    f.inject(ctx)
    assert f.detail["previous_controller"] == "kafka-1"
    assert f.detail["new_controller"] == "kafka-3"
    f.heal(ctx)
    rows = event_rows(ctx)
    assert [(r["kind"], r["name"]) for r in rows] == [
        ("observe", "controller"), ("fault", "controller-kill"), ("heal", "controller-kill")]
    assert rows[0]["detail"]["fault_id"] == f.fault_id and rows[0]["target"] == "kafka-3"
    assert ctx.cluster.node(1).is_running()


def test_controller_failover_without_a_successor_says_so(ctx):
    f = ControllerFailover("isolate", wait_for_new_s=0.2)
    f.inject(ctx)
    assert f.detail["new_controller"] is None
    assert ctx.cluster.node(1).rules()
    f.heal(ctx)
    assert not ctx.cluster.node(1).rules()


def test_zk_session_expiry_needs_zookeeper_and_heals(tmp_path):
    cluster = FakeCluster(tmp_path, brokers=3, zookeepers=1)
    ctx = FaultContext(cluster=cluster, rng=random.Random(0))
    f = ZkSessionExpiry(sel.node(2), "partition", session_timeout_ms=10, margin_s=0)
    f.inject(ctx)
    assert cluster.node(2).rules() == ["-s 172.30.0.200 -j DROP"]
    assert cluster.node("zk-1").rules() == ["-s 172.30.0.12 -j DROP"]
    assert cluster.node(1).rules() == []
    f.heal(ctx)
    f.heal(ctx)
    assert cluster.node(2).rules() == []
    k = ZkSessionExpiry(sel.node(2), "pause")
    with pytest.raises(FaultError, match="ZooKeeper-mode"):
        k.inject(FaultContext(cluster=FakeCluster(tmp_path / "k", brokers=3)))


def test_inject_failure_is_recorded_and_healable(ctx):
    class HalfDone(BaseFault):
        name = "half"
        undone = 0

        def _inject(self, ctx):
            self.targets = [ctx.cluster.node(1)]
            raise RuntimeError("died half-way")

        def _heal(self, ctx):
            HalfDone.undone += 1
    f = HalfDone()
    with pytest.raises(RuntimeError):
        f.inject(ctx)
    assert f.fault_id in ctx.active
    heal_all(ctx, "test")
    assert HalfDone.undone == 1 and not ctx.active
    rows = event_rows(ctx)
    assert rows[0]["kind"] == "fault" and "died half-way" in rows[0]["detail"]["inject_error"]
    assert rows[1]["kind"] == "heal"
    assert rows[2]["kind"] == "phase" and rows[2]["name"] == "heal-all"
    assert rows[2]["detail"]["healed"] == [f.fault_id]


@pytest.mark.parametrize("ending", ["ok", "error", "assertion", "ctrl-c", "sigterm"])
def test_heal_all_on_exit_always_runs_and_records_it(ctx, ending):
    f = Pause(sel.node(2), DOCKER)
    raised = {"ok": None, "error": RuntimeError, "assertion": AssertionError,
              "ctrl-c": KeyboardInterrupt, "sigterm": KeyboardInterrupt}[ending]
    try:
        with heal_all_on_exit(ctx):
            f.inject(ctx)
            if ending == "error":
                raise RuntimeError("workload crashed")
            if ending == "assertion":
                raise AssertionError("verdict failed")
            if ending == "ctrl-c":
                raise KeyboardInterrupt
            if ending == "sigterm":
                os.kill(os.getpid(), signal.SIGTERM)
    except BaseException as e:  # noqa: BLE001
        assert raised is not None and isinstance(e, raised)
    assert not ctx.cluster.node(2).paused
    assert ctx.heal_all_runs == 1
    heal_rows = [r for r in event_rows(ctx) if r["name"] == "heal-all"]
    assert len(heal_rows) == 1 and heal_rows[0]["kind"] == "phase"
    expected_reason = {"ok": "completed", "ctrl-c": "interrupted", "sigterm": "interrupted",
                       "error": "error: RuntimeError", "assertion": "error: AssertionError"}
    assert heal_rows[0]["detail"]["reason"] == expected_reason[ending]
    assert signal.getsignal(signal.SIGTERM) in (signal.SIG_DFL, None) or callable(
        signal.getsignal(signal.SIGTERM))


def test_sweep_cleans_what_a_crashed_harness_left(ctx):
    # A previous harness process injected and died: this context knows nothing of it.
    other = FaultContext(cluster=ctx.cluster, log_dir=ctx.log_dir)
    from faults.network import Partition, isolate
    Partition(isolate(sel.node(1))).inject(other)
    Pause(sel.node(2), SIGSTOP).inject(other)
    Pause(sel.node(3), DOCKER).inject(other)
    DiskFull(sel.node(1)).inject(other)
    assert len(leftovers(ctx)) >= 4
    report = heal_all(ctx, "crash-recovery")
    assert set(report.swept) >= {"kafka-1", "kafka-2", "kafka-3"}
    assert leftovers(ctx) == []


def test_sweep_starts_a_node_a_crashed_harness_left_stopped(ctx):
    # Killed by a fault of a dead harness (or shut down by Kafka itself when its only
    # log dir failed): heal-all starts it, so the cluster can return to full ISR.
    other = FaultContext(cluster=ctx.cluster, log_dir=ctx.log_dir)
    Kill(sel.node(2), HARD).inject(other)
    assert not ctx.cluster.node(2).is_running()
    report = heal_all(ctx, "crash-recovery")
    assert ctx.cluster.node(2).is_running()
    assert "kafka-2 (started)" in report.swept
    assert leftovers(ctx) == []


def test_leftovers_reports_a_paused_or_stopped_container(ctx):
    # A paused container is not running; it must be reported, not skipped as a stopped one.
    ctx.cluster.node(2).pause()
    ctx.cluster.node(3).kill()
    assert leftovers(ctx) == ["kafka-2: container paused", "kafka-3: container exited"]
    heal_all(ctx, "test")
    assert not ctx.cluster.node(2).paused and ctx.cluster.node(3).is_running()
    assert leftovers(ctx) == []


def test_bounce_leaves_a_node_that_went_down_by_itself_and_starts_it(ctx):
    # a ZooKeeper-mode broker restarted before its old session expired exits at start
    node = ctx.cluster.node(1)
    node.start = (lambda orig: lambda: (orig(), setattr(node, "running", len(node.calls) > 2)))(
        node.start)
    f = Bounce(sel.node(1), HARD, times=2, interval_s=0)
    f.inject(ctx)
    assert node.calls == ["kill SIGKILL", "start", "start"], "no kill of a node already down"
    assert node.is_running()


class ReadinessCluster(FakeCluster):
    """A fake cluster that can tell a broker has finished starting (BrokerReadiness)."""

    def broker_ready(self, node) -> bool:
        return node.is_running()


def exits_at_first_starts(node, times: int) -> None:
    """The node's first `times` starts exit at once, as a ZooKeeper-mode broker does
    when started before its old session expired (NodeExists)."""
    left = [times]
    orig = node.start

    def start():
        orig()
        if left[0]:
            left[0] -= 1
            node.running = False
    node.start = start


@pytest.fixture
def supervised_ctx(tmp_path, monkeypatch):
    monkeypatch.setattr("faults.process.RESTART_DELAY_S", 0)
    events = EventLog(tmp_path / "run", "r1")
    yield FaultContext(cluster=ReadinessCluster(tmp_path / "c", brokers=3), events=events,
                       settle_timeout_s=5)
    events.close()


def test_kill_heal_starts_again_a_broker_that_exits_while_starting(supervised_ctx):
    ctx, node = supervised_ctx, supervised_ctx.cluster.node(1)
    exits_at_first_starts(node, 2)
    f = Kill(sel.node(1), HARD)
    f.inject(ctx)
    f.heal(ctx)
    assert node.is_running() and node.calls == ["kill SIGKILL", "start", "start", "start"]
    heal = event_rows(ctx)[-1]
    assert heal["kind"] == "heal" and heal["detail"]["restarts_at_start"] == {"kafka-1": 2}
    # the heal is timed at the start that held, not when the broker finished starting
    assert heal["ts_us"] == f.healed_at_us


def test_bounce_rounds_wait_for_a_broker_that_exits_while_starting(supervised_ctx):
    ctx, node = supervised_ctx, supervised_ctx.cluster.node(2)
    exits_at_first_starts(node, 1)
    f = Bounce(sel.node(2), HARD, times=2, interval_s=0)
    f.inject(ctx)
    # round 1: kill, a start that exits, a start that holds; round 2: kill, start
    assert node.calls == ["kill SIGKILL", "start", "start", "kill SIGKILL", "start"]
    assert f.detail["restarts_at_start"] == {"kafka-2": 1}


def test_a_broker_that_exits_at_every_start_fails_the_heal(supervised_ctx):
    ctx, node = supervised_ctx, supervised_ctx.cluster.node(1)
    exits_at_first_starts(node, 10**9)
    f = Kill(sel.node(1), HARD)
    f.inject(ctx)
    with pytest.raises(FaultError, match="exited at every start"):
        f.heal(ctx)
    assert f.fault_id in ctx.active, "a failed heal leaves the fault for heal-all"


def test_kill_heal_leaves_a_node_another_fault_paused(ctx):
    node = ctx.cluster.node(2)
    f = Kill(sel.node(2), HARD)
    f.inject(ctx)
    node.start()                   # started meanwhile by another fault's heal
    p = Pause(sel.node(2), DOCKER)
    p.inject(ctx)
    f.heal(ctx)                    # Docker refuses to start a paused container (409)
    assert node.paused and not ctx.active.get(f.fault_id)
    p.heal(ctx)
    assert node.is_running()


def test_a_heal_starts_every_target_before_supervising_them(supervised_ctx):
    # claim 5 (not enough replicas): two followers healed one after the other, each seen
    # through start-up before the next start, let the first rejoin the ISR before the
    # heal row, and records were acknowledged "during" the fault.
    ctx = supervised_ctx
    two, three = ctx.cluster.node(2), ctx.cluster.node(3)
    order: list[str] = []
    for node in (two, three):
        node.start = (lambda n, orig: lambda: (order.append(n.name), orig()))(node, node.start)
    exits_at_first_starts(two, 1)
    ready_polls = {"kafka-3": 0}
    plain_ready = ctx.cluster.broker_ready

    def slow_three(node):
        if node.name == "kafka-3":
            ready_polls["kafka-3"] += 1
            return ready_polls["kafka-3"] > 3
        return plain_ready(node)
    ctx.cluster.broker_ready = slow_three
    f = Kill(lambda c: [c.cluster.node(2), c.cluster.node(3)], HARD)
    f.inject(ctx)
    f.heal(ctx)
    assert order == ["kafka-2", "kafka-3", "kafka-2"], "both started before either is watched"
    assert two.is_running() and three.is_running()
    heal = event_rows(ctx)[-1]
    assert heal["detail"]["restarts_at_start"] == {"kafka-2": 1}
    assert heal["ts_us"] == f.healed_at_us


def test_the_sweep_restarts_a_broker_it_finds_with_a_full_disk(supervised_ctx, tmp_path, monkeypatch):
    # A dead harness left kafka-3's disk full. The broker may have hit ENOSPC already and
    # halt seconds after the sweep frees the disk and finds it running (seen in CI):
    # restarted, it is settled either way. A node with no filler is left running.
    from faults.disk import FILLER
    mounts = {n.name: tmp_path / "mounts" / n.name for n in supervised_ctx.cluster.nodes()}
    for m in mounts.values():
        m.mkdir(parents=True)
    (mounts["kafka-3"] / FILLER).write_bytes(b"\0" * 1024)
    monkeypatch.setattr("faults.healall.host_mount_of", lambda ctx, node: str(mounts[node.name]))
    monkeypatch.setattr("faults.healall.mount_is_readonly", lambda path: False)
    heal_all(supervised_ctx, "crash-recovery")
    three, one = supervised_ctx.cluster.node(3), supervised_ctx.cluster.node(1)
    assert not (mounts["kafka-3"] / FILLER).exists()
    assert [c for c in three.calls if c in ("stop", "start")] == ["stop", "start"]
    assert three.is_running()
    assert not [c for c in one.calls if c in ("stop", "start")]


def test_a_pause_of_a_killed_broker_fails_in_words_and_its_row_says_so(ctx):
    # the new user's scenario: kafka-2 killed, then paused while down
    kill, pause = Kill(sel.node(2), HARD), Pause(sel.node(2), DOCKER)
    kill.inject(ctx)
    with pytest.raises(FaultError, match=r"kafka-2 is not running \(its container is exited\)"):
        pause.inject(ctx)
    assert "pause" not in ctx.cluster.node(2).calls       # nothing was asked of Docker
    pause.heal(ctx)                                     # a heal of nothing: no error
    kill.heal(ctx)
    rows = event_rows(ctx)
    assert [(r["kind"], r["name"]) for r in rows] == [
        ("fault", "kill"), ("fault", "pause"), ("heal", "pause"), ("heal", "kill")]
    assert rows[1]["detail"]["inject_error"].startswith("FaultError: kafka-2 is not running")
    assert not any("heal_error" in r["detail"] for r in rows)


class _HealFails(BaseFault):
    name = "stubborn"

    def __init__(self, failures: int):
        super().__init__()
        self.failures = failures

    def _inject(self, ctx):
        pass

    def _heal(self, ctx):
        if self.failures:
            self.failures -= 1
            raise FaultError("cannot undo it")


def test_a_failed_heal_writes_a_heal_error_row_and_the_heal_follows(ctx):
    f = _HealFails(failures=1)
    f.inject(ctx)
    with pytest.raises(FaultError):
        f.heal(ctx)
    assert f.fault_id in ctx.active
    heal_all(ctx, "teardown")                  # heal-all's retry succeeds
    rows = [r for r in event_rows(ctx) if r["kind"] in ("fault", "heal")]
    assert [r["kind"] for r in rows] == ["fault", "heal", "heal"]
    assert rows[1]["detail"] == {"fault_id": f.fault_id, "label": "stubborn",
                                 "heal_error": "FaultError: cannot undo it"}
    assert "heal_error" not in rows[2]["detail"]
