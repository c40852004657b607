"""The Docker engine connection, with one clear error when there is none."""
from __future__ import annotations

import functools
import time

from core.errors import DockerUnavailable, HarnessError


@functools.lru_cache(maxsize=1)
def docker_client():
    # docker-py loads slowly and only commands that reach the engine need it
    import docker
    try:
        client = docker.from_env(version="auto", timeout=120)
        client.ping()
    except Exception as e:  # the SDK raises several types for "no engine"
        raise DockerUnavailable(
            f"no Docker engine answers ({type(e).__name__}: {str(e)[:200]}) "
            "(fix: run the README's set-up command, or start it with `dockerd &` as root)") from None
    return client


def remove_container(container, what: str) -> None:
    """Remove a container of ours, running or not; one already gone is fine, anything
    else is a HarnessError naming `what`."""
    if container is None:
        return
    try:
        container.remove(force=True)
    except Exception as e:  # noqa: BLE001 - the SDK's NotFound and friends; said, not swallowed
        if "No such container" not in str(e):
            raise HarnessError(f"could not remove {what}: {e}") from e


# The cgroup freezer can fail to freeze a container while one of its processes sits in
# an uninterruptible wait (a JVM starting, reading its jars): runc gives up after a
# short while with "unable to freeze". Seen in CI on MirrorMaker 2 paused 5 s after a
# restart. Asked again, it freezes.
FREEZE_TRIES, FREEZE_RETRY_S = 5, 0.5


def freeze_container(container) -> int:
    """`docker pause`, asked again while the freezer cannot freeze yet; how many tries it
    took. Any other error, or the last try's, is raised as Docker gave it."""
    for attempt in range(1, FREEZE_TRIES + 1):
        try:
            container.pause()
            return attempt
        except Exception as e:  # noqa: BLE001 - the SDK's APIError; only this one is retried
            if "unable to freeze" not in str(e) or attempt == FREEZE_TRIES:
                raise
            time.sleep(FREEZE_RETRY_S)
    return FREEZE_TRIES
