"""MirrorMaker 2 in dedicated mode, in a one-off container from the Kafka image of the
target's version: `org.apache.kafka.connect.mirror.MirrorMaker` (what
connect-mirror-maker.sh runs; the image has no bin/ scripts) on the jars of
families/mirror/jars.py, its properties written from the scenario (`properties`).

The container is created on the source's network, attached to the target's, then
started: it reaches both clusters' brokers at the IP addresses they advertise (with a
link proxy, the source's through it: families/mirror/link.py). It runs with NET_ADMIN in
its own network namespace, where faults/link.py's `link-partition` drops its traffic to
one cluster (`exec`). It carries the run id's labels (role mirror-maker), so the source cluster's stop and
`harness gc` remove it too if our own stop never ran.
"""
from __future__ import annotations

import re
import shlex
import uuid
from pathlib import Path

from clusters.docker_env import docker_client, freeze_container, remove_container
from clusters.labels import run_labels
from families.mirror.link import LinkProxy
from families.mirror.section import SOURCE, TARGET, MirrorSpec

LIBS = "/opt/mm2-libs"
CONF = "/mm2"
MAIN = "org.apache.kafka.connect.mirror.MirrorMaker"
OFFSET_FLUSH_MS = 1000        # MM2 commits how far it has copied this often: the drain's catch-up reads it
REFRESH_S = 5                 # new topics and groups found this soon after they appear
# log4j 2's configuration (4.x) in its properties format: the image's log4j2.yaml needs
# jackson-dataformat-yaml, which connect-mirror's jars do not bring; 3.x (reload4j)
# reads the image's log4j.properties
LOG4J2 = """status = warn
appender.stdout.type = Console
appender.stdout.name = STDOUT
appender.stdout.layout.type = PatternLayout
appender.stdout.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = info
rootLogger.appenderRef.stdout.ref = STDOUT
logger.clients.name = org.apache.kafka.clients
logger.clients.level = warn
"""


def offsets_topic() -> str:
    """The target's topic where MM2's source connector commits the source offsets it
    has copied (the Connect worker's offset.storage.topic in dedicated mode)."""
    return f"mm2-offsets.{SOURCE}.internal"


def properties(spec: MirrorSpec, source_bootstrap: str, target_bootstrap: str) -> dict[str, str]:
    """MM2's configuration: source->target only, the spec's topics, replication factors
    fitting the target, checkpoints and group offset sync, and with exactly_once the
    target's exactly-once source support (KIP-618) with KIP-710's internal REST."""
    rf = str(spec.target.brokers)
    flow = f"{SOURCE}->{TARGET}"
    props = {
        "clusters": f"{SOURCE}, {TARGET}",
        f"{SOURCE}.bootstrap.servers": source_bootstrap,
        f"{TARGET}.bootstrap.servers": target_bootstrap,
        f"{flow}.enabled": "true",
        f"{TARGET}->{SOURCE}.enabled": "false",
        f"{flow}.topics": ",".join(re.escape(t) for t in spec.mirrored),
        f"{flow}.groups": ".*",
        "replication.factor": rf,
        **{f"{t}.replication.factor": rf for t in (
            "checkpoints.topic", "heartbeats.topic", "offset-syncs.topic",
            "offset.storage", "status.storage", "config.storage")},
        "emit.checkpoints.enabled": "true",
        "emit.checkpoints.interval.seconds": f"{spec.emit_checkpoints_interval_s:g}",
        "sync.group.offsets.enabled": str(spec.sync_group_offsets).lower(),
        "sync.group.offsets.interval.seconds": f"{spec.emit_checkpoints_interval_s:g}",
        "refresh.topics.interval.seconds": str(REFRESH_S),
        "refresh.groups.interval.seconds": str(REFRESH_S),
        "sync.topic.acls.enabled": "false",       # the clusters have no authorizer
        "offset.flush.interval.ms": str(OFFSET_FLUSH_MS),
        f"{TARGET}.offset.flush.interval.ms": str(OFFSET_FLUSH_MS),
    }
    if spec.exactly_once:
        props.update({f"{TARGET}.exactly.once.source.support": "enabled",
                      "dedicated.mode.enable.internal.rest": "true",
                      "listeners": "http://localhost:8080"})
    props.update(spec.mm2_config)           # the user's, checked by the section (mm2_owned)
    return props


def properties_text(props: dict[str, str]) -> str:
    return "".join(f"{k} = {v}\n" for k, v in props.items())


class MirrorMaker:
    """One MM2 process in its container: start, kill, restart, logs, remove."""

    def __init__(self, run_id: str, image: str, libs: Path, conf_dir: Path, heap_mb: int):
        self.run_id, self.image, self.libs, self.conf_dir = run_id, image, libs, conf_dir
        self.heap_mb = heap_mb
        self.name = f"kh-{run_id}-mm2-{uuid.uuid4().hex[:4]}"
        self.container = None
        # down or frozen on purpose (the section's kill, an mm2-kill or mm2-pause fault):
        # the family's health check lets it be
        self.held = False
        self.link: LinkProxy | None = None      # its own proxy to the source, if any

    def start(self, props: dict[str, str], source_network: str, target_network: str,
              link: LinkProxy | None = None) -> None:
        self.conf_dir.mkdir(parents=True, exist_ok=True)
        (self.conf_dir / "mm2.properties").write_text(properties_text(props))
        (self.conf_dir / "log4j2.properties").write_text(LOG4J2)
        heap = f"-Xmx{self.heap_mb}m -Xms{self.heap_mb // 2}m"
        logs = ("-Dlog4j.configuration=file:/opt/kafka/log4j.properties "
                f"-Dlog4j2.configurationFile={CONF}/log4j2.properties")
        cmd = (f"exec java {heap} {logs} -cp {shlex.quote(LIBS + '/*')} {MAIN} "
               f"{CONF}/mm2.properties")
        self.link = link
        if link is not None:             # every start, a restart's too: a fresh namespace
            cmd = f"{link.dnat()} && {cmd}"

        client = docker_client()
        self.container = client.containers.create(
            self.image, entrypoint=["sh", "-c"], command=[cmd], name=self.name,
            network=source_network, labels=run_labels(self.run_id, role="mirror-maker"),
            mem_limit=f"{self.heap_mb + 256}m", user="root", cap_add=["NET_ADMIN"],
            volumes={str(self.libs): {"bind": LIBS, "mode": "ro"},
                     str(self.conf_dir.resolve()): {"bind": CONF, "mode": "ro"}})
        client.networks.get(target_network).connect(self.container)
        self.container.start()

    def status(self) -> str:
        if self.container is None:
            return "absent"
        try:
            self.container.reload()
            return self.container.status
        except Exception:  # noqa: BLE001 - removed under us (harness gc, a sweep)
            return "removed"

    def kill(self) -> None:
        self.held = True
        self.container.kill(signal="SIGKILL")

    def restart(self) -> None:
        """The same container started again: the same configuration, its offsets and
        configs in the target's internal topics, as an operator's restart would."""
        self.container.start()
        self.held = False

    def pause(self) -> None:
        self.held = True
        freeze_container(self.container)

    def unpause(self) -> None:
        self.container.unpause()
        self.held = False

    def exec(self, script: str) -> tuple[int, str]:
        """A shell script in MM2's container as root (its network namespace: link faults)."""
        code, out = self.container.exec_run(["sh", "-c", script], user="root")
        return code, (out or b"").decode(errors="replace")

    # what faults/link.py asks of MM2's link to the source
    def link_addresses(self, side: str) -> list[str]:
        return [self.link.ip] if self.link is not None and side == SOURCE else []

    def link_proxy_names(self) -> list[str]:
        return [r.name for r in self.link.routes] if self.link is not None else []

    @property
    def link_toxiproxy(self):
        return self.link.adapter if self.link is not None else None

    def logs(self) -> str:
        return self.container.logs().decode(errors="replace") if self.container else ""

    def remove(self) -> None:
        remove_container(self.container, self.name)


# Connect's words for a task it has given up on (WorkerTask): it never starts that task
# again by itself, and a dedicated MM2 has no REST API to ask it to (seen: an exactly-once
# checkpoint task whose zombie-fencing read timed out while the target was paused,
# benchmarks/evidence/mm2-eos-checkpoint-task-killed-by-target-pause/)
TASK_FAILED = re.compile(r"\[(?P<at>[^\]]+)\] ERROR \w+\{id=(?P<task>[^}]+)\} Task threw an "
                         r"uncaught and unrecoverable exception")


def task_failures(log_text: str) -> list[dict]:
    """The tasks MM2's log says Connect killed for good: which, when (the log's own
    time), and why (the exception's first line, and its last `Caused by:` if any)."""
    out = []
    lines = log_text.splitlines()
    for i, line in enumerate(lines):
        m = TASK_FAILED.match(line)
        if m is None:
            continue
        trace = []
        for follow in lines[i + 1:i + 200]:
            if follow.startswith("["):           # the next log line: the trace has ended
                break
            trace.append(follow.strip())
        causes = [t for t in trace if t.startswith("Caused by:")]
        why = next((t for t in trace if t and not t.startswith("at ")), "")
        if causes and causes[-1] != why:
            why = f"{why} ({causes[-1]})" if why else causes[-1]
        out.append({"task": m["task"], "at": m["at"], "error": why[:500]})
    return out
