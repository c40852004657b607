"""One cluster node: a container made with testcontainers' DockerContainer,
driven afterwards through the Docker SDK (kill, pause, stop/start keep the
same container, so its name, address and mounts stay)."""
from __future__ import annotations

import time
from typing import TYPE_CHECKING

import docker.errors

from clusters.api import ExecResult
from clusters.docker_env import freeze_container
from core.errors import HarnessError

if TYPE_CHECKING:
    from testcontainers.core.container import DockerContainer


class DockerNode:
    def __init__(self, name: str, role: str, node_id: int | None, container: "DockerContainer",
                 network_name: str, image: str):
        self.name = name
        self.role = role
        self.node_id = node_id
        self.image = image
        self._tc = container
        self._network_name = network_name
        self._ip: str | None = None

    def __repr__(self) -> str:
        return f"<{self.role} {self.name} id={self.node_id}>"

    @property
    def container(self):
        """The Docker SDK container object."""
        return self._tc.get_wrapped_container()

    @property
    def container_name(self) -> str:
        return self.container.name

    @property
    def ip(self) -> str:
        if self._ip is None:
            self.container.reload()
            nets = self.container.attrs["NetworkSettings"]["Networks"]
            ip = nets.get(self._network_name, {}).get("IPAddress")
            if not ip:
                raise HarnessError(f"{self.name} has no address on {self._network_name} "
                                   f"(state {self.container.status})")
            self._ip = ip
        return self._ip

    def status(self) -> str:
        try:
            self.container.reload()
            return self.container.status   # created, running, paused, exited …
        except docker.errors.NotFound:
            return "removed"

    def is_running(self) -> bool:
        return self.status() == "running"

    def kill(self, signal: str = "SIGKILL") -> None:
        self.container.kill(signal=signal)

    def stop(self, timeout: float = 30) -> None:
        if self.status() == "paused":
            self.container.unpause()
        self.container.stop(timeout=int(timeout))

    def start(self) -> None:
        self.container.start()
        self._ip = None   # Docker may hand out another address on restart

    def restart(self) -> None:
        self.stop()
        self.start()

    def pause(self) -> None:
        freeze_container(self.container)

    def unpause(self) -> None:
        if self.status() == "paused":
            self.container.unpause()

    def exec(self, cmd: str | list[str], user: str = "root") -> ExecResult:
        if isinstance(cmd, str):
            cmd = ["/bin/bash", "-c", cmd]
        code, out = self.container.exec_run(cmd, user=user, demux=False)
        return ExecResult(code, (out or b"").decode(errors="replace"))

    def logs(self) -> str:
        return self.container.logs(stdout=True, stderr=True).decode(errors="replace")

    def wait_exited(self, timeout: float = 30) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.status() in ("exited", "dead", "removed"):
                return True
            time.sleep(0.2)
        return False
