"""RunContext.load_left: the seconds a load has left, its duration or the run's cut."""
from __future__ import annotations

import time

import pytest

from core.context import RunContext


def test_a_load_runs_its_duration_unless_the_run_cuts_it_sooner(tmp_path):
    ctx = RunContext("r", tmp_path, None)
    began = time.monotonic()
    assert ctx.load_left(began, 60) == pytest.approx(60, abs=1)
    ctx.load_cut_at = began + 20
    assert ctx.load_left(began, 60) == pytest.approx(20, abs=1)
    assert ctx.load_left(began, 10) == pytest.approx(10, abs=1)      # its duration comes first
    assert ctx.load_left(began - 100, 60) == 0.0                      # over: never negative
