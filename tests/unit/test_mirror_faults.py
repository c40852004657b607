"""Faults of a mirrored run that need no cluster: MirrorMaker 2 killed or paused through
the process the family hands the fault context (its bookkeeping: fault and heal rows,
heal-all), and a fault on the target cluster acting through the target's context while
sharing the run's bookkeeping."""
from __future__ import annotations

from test_fault_fakes import FakeProcess as Process  # same dir: pytest puts it on sys.path

from faults.base import FaultContext
from faults.catalog import resolve_fault
from faults.healall import heal_all


def test_mm2_kill_and_pause_act_on_the_process_and_heal_it():
    p = Process()
    ctx = FaultContext(cluster=None, processes={"mirror-maker": p})
    kill = resolve_fault("mm2-kill", None, None, "f").build()
    kill.inject(ctx)
    assert p.calls == ["kill"] and kill.detail["container"] == p.name
    assert list(ctx.active) == [kill.fault_id]
    kill.heal(ctx)
    pause = resolve_fault("mm2-pause", None, None, "f").build()
    pause.inject(ctx)
    heal_all(ctx, "completed")                        # left held: heal-all unpauses it
    assert p.calls == ["kill", "restart", "pause", "unpause"] and not ctx.active
    assert "MirrorMaker 2 frozen" in pause.words(pause.name, [], pause.detail)


def test_an_mm2_fault_in_a_run_without_mm2_fails_its_inject():
    ctx = FaultContext(cluster=None)
    kill = resolve_fault("mm2-kill", None, None, "f").build()
    try:
        kill.inject(ctx)
    except RuntimeError as e:
        assert "no mirror-maker" in str(e)
    assert "no mirror-maker" in kill.detail["inject_error"]


def test_a_target_fault_runs_in_the_target_context_with_the_run_bookkeeping():
    source, target = object(), object()
    seen = []

    def selector(c):
        seen.append(c.cluster)
        return []
    ctx = FaultContext(cluster=source)
    ctx.others["target"] = FaultContext(cluster=target)
    fault = resolve_fault("kill", {"random_broker": {}, "cluster": "target"}, None, "f").build()
    assert fault.cluster_name == "target"
    fault.selector = selector                          # nodes: none, so nothing is killed
    fault.inject(ctx)
    assert seen == [target] and fault.fault_id in ctx.active   # the run's own active list
    assert fault._event_detail()["cluster"] == "target"
    fault.heal(ctx)
    assert not ctx.active
