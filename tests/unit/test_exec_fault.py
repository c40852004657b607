"""The exec fault: templates, its commands' records in the history, timeouts, failures."""
import time

import pytest

from core.history import EventLog
from faults.base import FaultContext, FaultError
from faults.exec import Exec, command_plan, render, run_command, template_keys
from faults.selectors import node


class _Node:
    def __init__(self, name, node_id, **vars):
        self.name, self.node_id, self.role = name, node_id, "broker"
        self.vars = {"node": name, "id": str(node_id), **vars}


class _Cluster:
    run_id = "R1"

    def __init__(self, secret="hunter22"):
        self._nodes = [_Node("kafka-0", 0, pod="p-0"), _Node("kafka-1", 1, pod="p-1")]
        self.redact = lambda text: text.replace(secret, "***")

    def nodes(self, role=None):
        return self._nodes

    def node(self, name_or_id):
        return next(n for n in self._nodes if name_or_id in (n.name, n.node_id))


def test_templates_leave_the_shells_braces_alone():
    cmd = "echo {pod} ${HOME} $(awk '{print $1}' f) {{literal}} {run_id} {a: [{pod}]}}"
    assert template_keys(cmd) == ["pod", "run_id", "pod"]
    assert render(cmd, {"pod": "p-0", "run_id": "R"}) == \
        "echo p-0 ${HOME} $(awk '{print $1}' f) {literal} R {a: [p-0]}}"
    with pytest.raises(KeyError):
        render("x {nope}", {})


def test_a_command_is_timed_out_with_its_children():
    started = time.monotonic()
    record = run_command("sleep 30 & sleep 30", 0.5, str)
    assert record["exit_code"] is None and time.monotonic() - started < 5


def test_inject_and_heal_run_per_target_and_are_recorded(tmp_path):
    events = EventLog(tmp_path, "R1", writer_name="t")
    ctx = FaultContext(cluster=_Cluster(), events=events)
    fault = Exec(node("kafka-1"), "echo injected {pod} hunter22", "echo healed {node}", 5)
    fault.inject(ctx)
    fault.heal(ctx)
    [rec] = fault.detail["commands"]
    assert rec["node"] == "kafka-1" and rec["command"] == "echo injected p-1 hunter22"
    assert rec["exit_code"] == 0 and rec["output"] == "injected p-1 ***\n"
    assert fault.heal_notes["heal_commands"][0]["output"] == "healed kafka-1\n"
    events.close()


def test_a_failing_command_is_a_fault_error_with_its_output(tmp_path):
    ctx = FaultContext(cluster=_Cluster(), events=None)
    fault = Exec(None, "echo no such pod {run_id} >&2; exit 3", None, 5)
    with pytest.raises(FaultError, match="exited 3: no such pod R1"):
        fault.inject(ctx)
    assert fault.detail["commands"][0]["exit_code"] == 3
    assert ctx.active            # heal-all still sees it (nothing to heal: no heal command)
    fault.heal(ctx)
    assert not ctx.active


def test_the_plan_names_each_node_a_selector_could_pick():
    nodes = [("kafka-0", "broker", {"node": "kafka-0", "id": "0"}),
             ("c-0", "controller", {"node": "c-0", "id": "9"})]
    assert command_plan("kill {id}", None, {"leader_of": {"topic": "t"}}, nodes) == ["on kafka-0: inject: kill 0"]
    assert command_plan("stop {node}", "start {node}", "active_controller", nodes) == [
        "on c-0: inject: stop c-0", "on c-0: heal:   start c-0"]
    assert command_plan("apply {run_id}", None, None, nodes, run_id="R") == ["inject: apply R"]


def test_a_failed_exec_fault_makes_the_run_exit_2_naming_it(tmp_path):
    """The run is judged and reported, but its result says the experiment did not happen
    as planned (exit 2), naming the fault; other kinds' errors keep the verdict."""
    from types import SimpleNamespace

    from core.context import RunContext
    from harness.run import Run
    from harness.run import faults as run_faults
    from harness.run.phases import PhaseLog

    ctx = RunContext("R1", tmp_path, None)
    run = Run(ctx, scenario=None, phases=PhaseLog(tmp_path, None))
    failed = SimpleNamespace(label="timeline[1] exec", error="inject: FaultError: `docker kill x` exited 1: "
                             "No such container: x", to_dict=lambda: {})
    kill = SimpleNamespace(label="timeline[0] kill", error="inject: SelectorError: no leader", to_dict=lambda: {})
    verdict = SimpleNamespace(exit_code=0, status="passed", reason=None)
    run.verified = SimpleNamespace(verdict=verdict, summary={"counts": {}})
    run.faults = SimpleNamespace(play=lambda scenario: [kill])
    run_faults.play(run, {})
    assert run.result().exit_code == 0            # another kind's error: listed, verdict kept
    run.faults = SimpleNamespace(play=lambda scenario: [kill, failed])
    run_faults.play(run, {})
    result = run.result()
    assert result.exit_code == 2 and result.status == "unknown"
    assert result.reason.startswith("faults.timeline[1].params: the exec command failed")
    assert "No such container: x" in result.reason and result.summary == {"counts": {}}
