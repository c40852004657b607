"""The Java share-group member (`client: java`): Kafka's own KafkaShareConsumer, the
second client of the shares family beside librdkafka's (docs/design/share-groups.md §2.4).

`java/ShareMember.java` is compiled against the kafka-clients jar of the image it runs
in, with a class archive, cached (java_build.prepared; `prepared_share_member`, for the
run's images phase), and each member incarnation runs in a one-off container of that
image on the cluster's network (java_clients._run_tool: labelled with the run id, always
removed). `JavaShareMember` is its parent-side handle (java_process): start, stop (SIGTERM: the member
commits and closes), kill (a container SIGKILL, at once), wait. Every stdout line (the
share-member journal, one JSON object per line; other lines too) goes to the caller's
`feed(line)`; the client's log (ShareConsumeRequestManager and ShareSessionHandler at
DEBUG) to `workloads/java-<member>/stderr.log`, the journal to `events.jsonl` beside it.

Exit codes: 0 after a stop, 3 after a fatal error (an `error` line with fatal true).
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workloads import java_build
from workloads.java_build import JavaProgram
from workloads.java_process import JavaProcess

if TYPE_CHECKING:
    from core.context import RunContext

SHARE_MEMBER = JavaProgram(
    source=Path(__file__).parent / "java" / "ShareMember.java", main="ShareMember",
    class_dir="/opt/harness-share", cache_name="share-member",
    train_args=("--group", "train", "--topics", "t", "--name", "train", "--mode", "explicit"),
    train_conf=(("bootstrap.servers", "127.0.0.1:1"),),
    debug_loggers=("org.apache.kafka.clients.consumer.internals.ShareConsumeRequestManager",
                   "org.apache.kafka.clients.consumer.internals.ShareSessionHandler"))
MODES = ("implicit", "explicit")
ACK_SENDS = ("poll", "sync", "async")
FATAL_EXIT = 3
# SIGTERM to the end: a commitSync and a close of 10 s each; _follow's SIGKILL comes at 30 s
STOP_TIMEOUT_S = 45.0


@dataclass(frozen=True)
class JavaShareMemberSpec:
    """What one Java member is: its name (the client.id), group, topics, acknowledgement
    mode, decisions (explicit mode) and how they are sent. `client_config`: Java client
    settings added to the cluster's (the member's own arguments win)."""
    name: str
    group: str
    topics: tuple[str, ...]
    mode: str = "explicit"
    release_rate: float = 0.0
    reject_rate: float = 0.0
    processing_ms: int = 0
    ack_send: str = "poll"
    max_poll_records: int = 500
    seed: int = 0
    client_config: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"share member {self.name}: mode {self.mode!r} is not one of {MODES}")
        if self.ack_send not in ACK_SENDS:
            raise ValueError(f"share member {self.name}: ack_send {self.ack_send!r} is not one of {ACK_SENDS}")
        rates = (self.release_rate, self.reject_rate)
        if min(rates) < 0 or sum(rates) > 1:
            raise ValueError(f"share member {self.name}: release_rate {self.release_rate} and reject_rate "
                             f"{self.reject_rate} must be >= 0 and add up to at most 1")
        if not self.topics or any("," in t for t in self.topics):
            raise ValueError(f"share member {self.name}: topics {self.topics!r}: one or more, no commas")


def member_args(spec: JavaShareMemberSpec) -> list[str]:
    """ShareMember's arguments (the `--config` file is added by _run_tool)."""
    opts = {"group": spec.group, "topics": ",".join(spec.topics), "name": spec.name, "mode": spec.mode,
            "release-rate": spec.release_rate, "reject-rate": spec.reject_rate,
            "processing-ms": spec.processing_ms, "ack-send": spec.ack_send,
            "max-poll-records": spec.max_poll_records, "seed": spec.seed}
    return [x for k, v in opts.items() for x in (f"--{k}", str(v))]


def member_config(spec: JavaShareMemberSpec, bootstrap: str) -> dict[str, Any]:
    """The client settings file: how to reach the cluster. group.id, client.id,
    share.acknowledgement.mode and max.poll.records come from the arguments."""
    return {"bootstrap.servers": bootstrap, **spec.client_config}


def prepared_share_member(image: str, run_id: str) -> Path:
    """ShareMember's jar and class archive for `image` (java_build.prepared)."""
    return java_build.prepared(SHARE_MEMBER, image, run_id)


class JavaShareMember(JavaProcess):
    """Parent-side handle of one Java member incarnation (java_process.JavaProcess): its
    stdout lines, the journal, fed to `feed`; a stop waits STOP_TIMEOUT_S by default."""

    def __init__(self, spec: JavaShareMemberSpec, run: "RunContext", feed: Callable[[str], None],
                 clients_version: str | None = None, timeout_s: float = 3600.0):
        super().__init__(SHARE_MEMBER, run, spec.name, member_args(spec),
                         member_config(spec, run.bootstrap), feed, clients_version=clients_version,
                         timeout_s=timeout_s, ok_exits=(0, FATAL_EXIT))
        self.spec = spec

    def stop(self, timeout: float | None = STOP_TIMEOUT_S) -> bool:
        return super().stop(timeout)
