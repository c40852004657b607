"""docker pause asked again while the cgroup freezer cannot freeze yet (clusters/docker_env.py)."""
from __future__ import annotations

import pytest

from clusters import docker_env


class Container:
    """Answers pause() with the given errors in turn, then succeeds."""

    def __init__(self, errors):
        self.errors, self.calls = list(errors), 0

    def pause(self):
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)


FREEZE = RuntimeError('500 Server Error: ("Cannot pause container x: OCI runtime pause failed: '
                      'unable to freeze: unknown")')


def test_a_freeze_that_fails_is_asked_again(monkeypatch):
    monkeypatch.setattr(docker_env, "FREEZE_RETRY_S", 0)
    c = Container([FREEZE, FREEZE])
    assert docker_env.freeze_container(c) == 3 and c.calls == 3


def test_other_errors_and_the_last_try_are_raised(monkeypatch):
    monkeypatch.setattr(docker_env, "FREEZE_RETRY_S", 0)
    c = Container([RuntimeError("container is not running")])
    with pytest.raises(RuntimeError, match="not running"):
        docker_env.freeze_container(c)
    assert c.calls == 1
    c = Container([FREEZE] * docker_env.FREEZE_TRIES)
    with pytest.raises(RuntimeError, match="unable to freeze"):
        docker_env.freeze_container(c)
    assert c.calls == docker_env.FREEZE_TRIES
