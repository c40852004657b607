"""The share-group family's clients: per group, its configs set through the admin API
(before any member joins: share.auto.offset.reset acts when a share-partition is
first initialised), its members (workloads/share_member.py on librdkafka), their
churn, and after the heal the final share drain.

Every member writes a journal; a journal becomes share_deliveries rows once its
member is gone (workloads/share_log.py), so a killed member's deliveries are in the
history with `ack_result: unknown`, never missing.

Events (kind `client`, target the member, detail `group_id`): share-group-config
(the configs as the brokers read them back, and the lock and delivery limit the
checker uses), share-member-start, share-churn-clock (the churn's clock started: how
long it waited for its first victim's first record), share-member-kill (written before the SIGKILL:
its time is the death), share-member-close, share-member-restart, share-member-exit
(it ended on its own; also workload-died), share-drain-result.
"""
from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ResourceType,
)

from core.context import RunContext
from core.errors import HarnessError
from core.history import WORKLOAD_DIED
from families.shares import drain
from families.shares.section import ShareGroupSpec
from workloads.connection import connection_only
from workloads.java_share import JavaShareMember, JavaShareMemberSpec
from workloads.process import WorkerProcess
from workloads.share_log import convert_journal, is_converted, journal_path
from workloads.share_member import ShareMemberSettings, run_share_member, settings_json
from workloads.worker_set import Worker, WorkerSet

DRAIN_MEMBER = "drain"
SESSION_DEFAULT_MS = 45000        # group.share.session.timeout.ms's default
CATCH_UP_QUIET_S = 3.0            # the members have caught up once their journals stop growing
CATCH_UP_MAX_S = 30.0
CHURN_CLOCK_MAX_S = 60.0          # the churn starts by then even if its victim has no record
SIGTERM_EXIT = 143                # 128 + SIGTERM: a JVM ended by the signal, no hook of ours


class JavaWorker:
    """A Java member (workloads/java_share.py) seen as a member process: its journal
    lines appended to the same file a librdkafka member writes, the time of its last
    `recv` kept (the drain stops on quiet)."""

    def __init__(self, g: ShareGroupSpec, ctx: RunContext, instance: str, accept_all: bool,
                 clients_version: str | None):
        path = journal_path(ctx.dir, g.group_id, instance)
        path.parent.mkdir(parents=True, exist_ok=True)
        self.journal = path.open("a", encoding="utf-8")
        self.last_recv = time.monotonic()
        self.killed = self.stopped = False
        spec = JavaShareMemberSpec(
            name=instance, group=g.group_id, topics=g.topics,
            mode="explicit" if accept_all else g.ack_mode,
            release_rate=0.0 if accept_all else g.release_rate,
            reject_rate=0.0 if accept_all else g.reject_rate,
            processing_ms=0 if accept_all else int(g.processing_ms),
            ack_send="sync" if accept_all else g.ack_send, max_poll_records=g.max_poll_records,
            seed=ctx.seed, client_config=g.client_config)
        self.member = JavaShareMember(spec, ctx, self._feed, clients_version)

    def _feed(self, line: str) -> None:
        if line.startswith("{") and not self.journal.closed:
            self.journal.write(line.rstrip("\n") + "\n")
            self.journal.flush()
            if '"ev":"recv"' in line.replace(" ", ""):
                self.last_recv = time.monotonic()

    def start(self) -> "JavaWorker":
        self.member.start()
        return self

    def is_alive(self) -> bool:
        return self.member.is_alive()

    @property
    def exitcode(self) -> int | None:
        return self.member.exitcode

    @property
    def died(self) -> bool:
        """It ended with an error we did not cause: not our kill, and not 143 after our
        stop (the SIGTERM reached the JVM before the member had set its shutdown hook:
        a member restarted just before the run's end)."""
        if self.exitcode in (None, 0) or self.killed:
            return False
        return not (self.stopped and self.exitcode == SIGTERM_EXIT)

    def request_stop(self) -> None:
        self.stopped = True
        self.member.stop(0)

    def stop(self, timeout: float = 30.0) -> None:
        self.stopped = True
        self.member.stop(timeout + 15)
        self.journal.close()

    def kill(self) -> None:
        self.killed = True
        self.member.kill()
        self.journal.close()


def settings_of(g: ShareGroupSpec, seed: int, client_config: dict, accept_all: bool = False
                ) -> ShareMemberSettings:
    return ShareMemberSettings(
        group_id=g.group_id, topics=g.topics, ack_mode=g.ack_mode, release_rate=g.release_rate,
        reject_rate=g.reject_rate, processing_ms=g.processing_ms, ack_send=g.ack_send,
        max_poll_records=g.max_poll_records, seed=seed,
        client_config={**client_config, **g.client_config}, accept_all=accept_all)


class ShareGroup(WorkerSet):
    """One group's members: started, killed or closed, restarted as new instances
    (s0, s0.1, s0.2 …: the spec wants a new name per instance)."""

    def __init__(self, spec: ShareGroupSpec, ctx: RunContext, clients_version: str | None = None):
        super().__init__()
        self.spec, self.ctx, self.clients_version = spec, ctx, clients_version
        self.settings = settings_of(spec, ctx.seed, connection_only(ctx.client_config or {}))
        self._received = False
        self.churn_began = time.monotonic()

    def _event(self, name: str, target: str, **detail) -> None:
        self.ctx.events.emit("client", name, target, group_id=self.spec.group_id, **detail)

    def start(self) -> "ShareGroup":
        for m in self.spec.member_names:
            self.start_instance(m, m)
        if self.spec.churn is not None:
            self.churn_began = time.monotonic()
            self.start_churn(
                self.spec.churn, self.spec.member_names, f"share-churn-{self.spec.group_id}",
                on_error=lambda m, e: self._event("share-churn-error", m, error=e),
                ready=self._churn_ready)
        return self

    def _churn_ready(self) -> bool:
        """The churn's clock starts once the member it bounces first has received a record
        (then it holds records when bounced: members can take 15 s to get their first,
        and one killed before holds nothing, share_held_returns 0), or CHURN_CLOCK_MAX_S
        after the start; said in a share-churn-clock event."""
        victim = self.spec.member_names[0]
        waited = time.monotonic() - self.churn_began
        had = self._has_received(victim)
        if not had and waited < CHURN_CLOCK_MAX_S:
            return False
        self._event("share-churn-clock", victim, waited_s=round(waited, 1), victim_had_record=had)
        return True

    def _has_received(self, instance: str) -> bool:
        path = journal_path(self.ctx.dir, self.spec.group_id, instance)
        return path.exists() and b'"recv"' in path.read_bytes()

    def start_instance(self, member: str, instance: str) -> None:
        logs = Path(self.ctx.dir) / "workloads"
        logs.mkdir(parents=True, exist_ok=True)
        if self.spec.client == "java":
            self.workers[instance] = JavaWorker(self.spec, self.ctx, instance, False,
                                                 self.clients_version).start()
        else:
            self.workers[instance] = WorkerProcess(
                f"share-{instance}", run_share_member, settings_json(self.settings), instance,
                self.ctx.bootstrap, self.ctx.dir, self.ctx.run_id,
                log_path=logs / f"share-{self.spec.group_id}-{instance}.log").start()
        self.current[member] = instance
        self._event("share-member-start", instance, member=member)

    def restarted(self, instance: str, previous: str, member: str) -> None:
        self._event("share-member-restart", instance, previous=previous, member=member)

    def kill(self, instance: str) -> None:
        self._event("share-member-kill", instance, signal="SIGKILL")
        self.workers[instance].kill()
        self._convert(instance)

    def close(self, instance: str, timeout: float = 30.0) -> None:
        self._event("share-member-close", instance, clean=True)
        self.workers[instance].stop(timeout)
        self._convert(instance)

    def _convert(self, instance: str) -> None:
        """Its journal into rows, once: a member killed or closed by the churn was
        converted then, and the group's stop goes over every instance again."""
        path = journal_path(self.ctx.dir, self.spec.group_id, instance)
        if path.exists() and not is_converted(path):
            convert_journal(path, self.ctx.dir, self.ctx.run_id, self.spec.group_id)

    def received_any(self) -> bool:
        if self._received:
            return True
        self._received = any(self._has_received(instance) for instance in self.workers)
        return self._received

    def closing(self, instance: str, graceful: bool) -> None:
        self._event("share-member-close", instance, clean=graceful, why="run-end")

    def ended(self, instance: str, worker: Worker) -> None:
        if worker.died:
            self._event("share-member-exit", instance, exitcode=worker.exitcode)
            self._event(WORKLOAD_DIED, instance, workload="share-member",
                        exitcode=worker.exitcode, source="exit code")
        self._convert(instance)


class ShareWorkloads:
    """Every share group of the scenario: entered by the runner's workloads-start."""

    def __init__(self, ctx: RunContext, workload):
        self.ctx, self.spec = ctx, workload
        self.groups: list[ShareGroup] = []
        self.session_ms: dict[str, int] = {}      # group -> share.session.timeout.ms, read back
        self.started_at: float | None = None
        self.stopped = False

    def __enter__(self) -> "ShareWorkloads":
        self.started_at = time.monotonic()
        for g in self.spec.share_groups:
            self._configure(g)
        for g in self.spec.share_groups:
            self.groups.append(ShareGroup(g, self.ctx, self.spec.clients_version).start())
        return self

    def _configure(self, g: ShareGroupSpec) -> None:
        """The group's configs, set and read back; the event the checker reads."""
        admin = AdminClient({"bootstrap.servers": self.ctx.bootstrap,
                             **connection_only(self.ctx.client_config or {})})
        res = ConfigResource(ResourceType.GROUP, g.group_id, incremental_configs=[
            ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET) for k, v in g.configs.items()])
        deadline = time.monotonic() + 60
        while True:
            try:
                admin.incremental_alter_configs([res])[res].result(30)
                break
            except Exception as e:  # noqa: BLE001 - retried until the coordinator answers
                if time.monotonic() > deadline:
                    raise HarnessError(f"share group {g.group_id}: setting its configs "
                                       f"{g.configs} failed: {e}") from None
                time.sleep(1)
        got = _read_back(admin, g)
        self.session_ms[g.group_id] = int(got.get("share.session.timeout.ms")
                                          or SESSION_DEFAULT_MS)
        lock = int(got.get("share.record.lock.duration.ms") or g.lock_ms)
        limit = int(got.get("share.delivery.count.limit") or g.delivery_count_limit)
        self.ctx.events.emit("client", "share-group-config", g.group_id, group_id=g.group_id,
                             topics=list(g.topics), configs=got, lock_ms=lock,
                             delivery_count_limit=limit)

    def not_ready(self) -> list[str]:
        """The groups none of whose members has received a record yet (the warm-up waits:
        a fault before a share group consumes tests nothing; seen, Java members still
        joining when the coordinator was paused, and no record received in the run)."""
        return [f"share group {g.spec.group_id}: no member has received a record yet"
                for g in self.groups if not g.received_any()]

    def check(self) -> None:
        for group in self.groups:
            if group.died():
                raise HarnessError(f"share group {group.spec.group_id}: member(s) "
                                   f"{', '.join(group.died())} died (their logs: run dir workloads/)")

    def __exit__(self, *exc) -> None:
        self.stop(graceful=False)

    def stop(self, graceful: bool) -> None:
        """Graceful: the members go on to the end of the load (the producers' duration;
        a run whose faults end early must not stop its queue early: seen, members closed
        19 s before the load ended and the drain got 4 605 records), then until they have
        received nothing for CATCH_UP_QUIET_S (at most CATCH_UP_MAX_S); quick otherwise."""
        if graceful and self.started_at is not None and not self.stopped:
            time.sleep(self.ctx.load_left(self.started_at, self.spec.duration_s))
            self._catch_up()
        for group in self.groups:
            group.stop(graceful)
        self.stopped = True

    def _catch_up(self) -> None:
        journals = [journal_path(self.ctx.dir, g.spec.group_id, i)
                    for g in self.groups for i in g.workers]
        size = -1
        quiet_since, deadline = time.monotonic(), time.monotonic() + CATCH_UP_MAX_S
        while time.monotonic() < deadline and time.monotonic() - quiet_since < CATCH_UP_QUIET_S:
            now = sum(p.stat().st_size for p in journals if p.exists())
            if now != size:
                size, quiet_since = now, time.monotonic()
            time.sleep(0.5)

    def drain(self) -> dict:
        """The final share drain, per group (families/shares/drain.py says how long), the
        groups side by side: each waits at least its lock duration, and nothing one group
        does changes how long another must wait."""
        groups = self.spec.share_groups
        if not groups:
            return {}
        with ThreadPoolExecutor(len(groups), thread_name_prefix="share-drain") as pool:
            results = list(pool.map(self._drain_group, groups))
        return {g.group_id: r for g, r in zip(groups, results, strict=True)}

    def _drain_group(self, g: ShareGroupSpec) -> dict:
        """On the group's own client (librdkafka's fails half its members on 4.1.2)."""
        started = time.monotonic()
        how_long = drain.plan(g.lock_ms, self.session_ms.get(g.group_id, SESSION_DEFAULT_MS),
                              g.drain_quiet_s, g.drain_timeout_s)
        pending = drain.pending_positions(self.ctx.dir, g.group_id, g.topics)
        path = journal_path(self.ctx.dir, g.group_id, DRAIN_MEMBER)
        watch = drain.JournalWatch(path)
        if g.client == "java":
            w = JavaWorker(g, self.ctx, DRAIN_MEMBER, True, self.spec.clients_version).start()
        else:
            settings = settings_of(g, self.ctx.seed, connection_only(self.ctx.client_config or {}),
                                   accept_all=True)
            w = WorkerProcess(f"share-drain-{g.group_id}", run_share_member, settings_json(settings),
                              DRAIN_MEMBER, self.ctx.bootstrap, self.ctx.dir, self.ctx.run_id,
                              log_path=Path(self.ctx.dir) / "workloads" / f"share-{g.group_id}-drain.log"
                              ).start()
        complete = drain.wait_for_drain(how_long, watch, pending, w.is_alive)
        w.stop(30.0)
        complete = complete and w.exitcode == 0
        rows = convert_journal(path, self.ctx.dir, self.ctx.run_id, g.group_id).rows if path.exists() else 0
        result = {"records": rows, "seconds": round(time.monotonic() - started, 1),
                  "pending_at_start": len(pending), "missing": len(pending - watch.received),
                  "min_s": how_long.min_s, "quiet_s": how_long.quiet_s, "complete": complete}
        self.ctx.events.emit("client", "share-drain-result", DRAIN_MEMBER, group_id=g.group_id, **result)
        return result


READ_BACK_S = 30.0


def _read_back(admin: AdminClient, g: ShareGroupSpec) -> dict[str, str]:
    """The group's share configs as a broker reads them, once they show what was set.
    The controller takes the change; the broker answering a describe learns it from the
    metadata log a moment later (seen here: a describe right after the change gave the
    defaults, share.auto.offset.reset latest). A member must not join before then: the
    share-partitions initialise from the configs they find."""
    res = ConfigResource(ResourceType.GROUP, g.group_id)
    deadline = time.monotonic() + READ_BACK_S
    while True:
        got = {k: v.value for k, v in admin.describe_configs([res])[res].result(30).items()
               if k.startswith("share.")}
        if all(got.get(k) == v for k, v in g.configs.items()):
            time.sleep(1.0)     # one broker has it; the others' metadata is a moment behind
            return got
        if time.monotonic() > deadline:
            raise HarnessError(f"share group {g.group_id}: its configs {g.configs} were set, but "
                               f"after {READ_BACK_S:g} s a broker still reads {got}")
        time.sleep(0.25)
