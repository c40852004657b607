"""The Docker engine connection, with one clear error when there is none."""
from __future__ import annotations

import functools

from core.errors import DockerUnavailable


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
