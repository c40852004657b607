"""The churn clock (workloads/churn.py) with real threads: it waits for the group to be
at work, bounces members round-robin, goes on after a failed bounce, and ends when a
bounce says the group is stopping."""
from __future__ import annotations

import threading
import time

from workloads.churn import Churn
from workloads.spec import ChurnSpec


def _churn(bounce, ready=lambda: True, errors=None):
    stopping = threading.Event()
    spec = ChurnSpec(every_s=0.05, first_s=0.05, how="kill", down_s=0)
    c = Churn(spec, ["m0", "m1"], name="t", bounce=bounce, stopping=stopping, ready=ready,
              on_error=lambda m, e: errors.append((m, e)) if errors is not None else None)
    return c, stopping


def test_no_bounce_before_the_group_is_ready_then_round_robin():
    bounced, is_ready = [], threading.Event()
    c, stopping = _churn(lambda m, clean, down: bounced.append((m, clean)), ready=is_ready.is_set)
    c.start()
    time.sleep(0.4)
    assert bounced == []
    is_ready.set()
    deadline = time.monotonic() + 5
    while len(bounced) < 3 and time.monotonic() < deadline:
        time.sleep(0.02)
    stopping.set()
    c.join(2)
    assert [m for m, _ in bounced[:3]] == ["m0", "m1", "m0"]
    assert all(clean is False for _, clean in bounced)


def test_a_failed_bounce_is_reported_and_the_churn_goes_on_until_told_to_stop():
    calls, errors = [], []

    def bounce(member, clean, down_s):
        calls.append(member)
        if len(calls) == 1:
            raise RuntimeError("container gone")
        return len(calls) < 3              # the third: the group is stopping

    c, _ = _churn(bounce, errors=errors)
    c.start()
    c.join(5)
    assert not c.thread.is_alive()
    assert calls == ["m0", "m1", "m0"]
    assert errors == [("m0", "RuntimeError: container gone")]


def test_stopping_while_waiting_for_ready_ends_the_churn_without_a_bounce():
    bounced = []
    c, stopping = _churn(lambda *a: bounced.append(a), ready=lambda: False)
    c.start()
    stopping.set()
    c.join(2)
    assert not c.thread.is_alive() and bounced == []
