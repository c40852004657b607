"""A worker set (workloads/worker_set.py) over real worker processes: a bounce closes or
kills the slot's instance and starts `<slot>.<n>`; the run's end asks every live worker
to stop before it waits for any, and tells the family about each instance once."""
from __future__ import annotations

from workloads.process import WorkerProcess
from workloads.worker_set import Worker, WorkerSet


def _wait_for_stop(stop_event, parent_pid):
    stop_event.wait(30)


def _fail(stop_event, parent_pid):
    raise SystemExit(3)


class _Group(WorkerSet):
    def __init__(self, target=_wait_for_stop):
        super().__init__()
        self.target, self.said = target, []

    def start_instance(self, slot, instance):
        self.workers[instance] = WorkerProcess(f"t-{instance}", self.target).start()
        self.current[slot] = instance
        self.said.append(("start", instance))

    def close(self, instance):
        self.said.append(("close", instance))
        self.workers[instance].stop(10.0)

    def kill(self, instance):
        self.said.append(("kill", instance))
        self.workers[instance].kill()

    def restarted(self, instance, previous, slot):
        self.said.append(("restarted", instance, previous, slot))

    def before_stop(self, graceful):
        self.said.append(("before-stop", graceful))

    def closing(self, instance, graceful):
        # every live worker is asked before any is waited for
        assert all(w.exitcode is None for w in self.workers.values() if w.is_alive())
        self.said.append(("closing", instance, graceful))

    def ended(self, instance, worker: Worker):
        self.said.append(("ended", instance, worker.exitcode, worker.died))


def test_bounces_name_each_new_instance_and_the_stop_tells_of_every_one():
    g = _Group()
    for slot in ("a", "b"):
        g.start_instance(slot, slot)
    g.bounce("a", clean=False, down_s=0)
    g.bounce("a", clean=True, down_s=0)
    assert g.current == {"a": "a.2", "b": "b"} and g.restarts == {"a": 2}
    g.stop(graceful=True)
    assert g.stopping.is_set()
    assert g.said == [
        ("start", "a"), ("start", "b"),
        ("kill", "a"), ("start", "a.1"), ("restarted", "a.1", "a", "a"),
        ("close", "a.1"), ("start", "a.2"), ("restarted", "a.2", "a.1", "a"),
        ("before-stop", True),
        ("closing", "b", True), ("closing", "a.2", True),
        ("ended", "a", -9, False), ("ended", "b", 0, False),
        ("ended", "a.1", 0, False), ("ended", "a.2", 0, False)]
    assert g.died() == []


def test_a_bounce_while_the_group_stops_leaves_the_slot_down():
    g = _Group()
    g.start_instance("a", "a")
    g.stopping.set()
    g.bounce("a", clean=False, down_s=5)
    assert g.current == {"a": "a"} and g.restarts == {}


def test_an_instance_that_ended_on_its_own_is_not_asked_to_stop_and_has_died():
    g = _Group(target=_fail)
    g.start_instance("a", "a")
    assert g.workers["a"].join(30)
    g.stop(graceful=False)
    assert ("closing", "a", False) not in g.said
    assert g.said[-1] == ("ended", "a", 3, True) and g.died() == ["a"]
