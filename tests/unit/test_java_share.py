"""The Java share-group member's Python side (workloads/java_share.py): its arguments and
client settings, its spec's refusals, its log and JVM options (java_build, shared with the
transactional producer), and how a run's container is stopped or killed (_follow)."""
from pathlib import Path

import pytest

from workloads.java_build import JavaProgram, run_opts
from workloads.java_clients import _follow
from workloads.java_share import SHARE_MEMBER, JavaShareMemberSpec, member_args, member_config
from workloads.java_txn import TXN_PRODUCER


def _spec(**kw) -> JavaShareMemberSpec:
    return JavaShareMemberSpec(**{"name": "s0", "group": "orders-2", "topics": ("orders", "audit"), **kw})


def test_member_args_name_every_flag_of_share_member_java():
    args = member_args(_spec(mode="implicit", release_rate=0.1, reject_rate=0.05, processing_ms=20,
                             ack_send="sync", max_poll_records=50, seed=7))
    assert args == ["--group", "orders-2", "--topics", "orders,audit", "--name", "s0", "--mode", "implicit",
                    "--release-rate", "0.1", "--reject-rate", "0.05", "--processing-ms", "20",
                    "--ack-send", "sync", "--max-poll-records", "50", "--seed", "7"]
    # every flag ShareMember.java reads is passed (its options are read by name)
    source = SHARE_MEMBER.source.read_text()
    assert all(f'"{a[2:]}"' in source for a in args[::2])


def test_member_config_is_the_cluster_address_and_the_scenario_settings_only():
    conf = member_config(_spec(client_config={"fetch.max.wait.ms": 100}), "10.0.0.2:9092")
    assert conf == {"bootstrap.servers": "10.0.0.2:9092", "fetch.max.wait.ms": 100}


@pytest.mark.parametrize("bad, says", [
    ({"mode": "auto"}, "mode 'auto'"),
    ({"ack_send": "close"}, "ack_send 'close'"),
    ({"release_rate": 0.7, "reject_rate": 0.4}, "add up to at most 1"),
    ({"release_rate": -0.1}, "must be >= 0"),
    ({"topics": ("a,b",)}, "no commas"),
    ({"topics": ()}, "one or more"),
])
def test_a_bad_member_spec_is_refused_with_its_name(bad, says):
    with pytest.raises(ValueError, match=says) as e:
        _spec(**bad)
    assert "share member s0" in str(e.value)


def test_the_members_log_configs_put_the_share_consumer_internals_at_debug():
    loggers = ["org.apache.kafka.clients.consumer.internals.ShareConsumeRequestManager",
               "org.apache.kafka.clients.consumer.internals.ShareSessionHandler"]
    assert all(f"log4j.logger.{n}=DEBUG\n" in SHARE_MEMBER.log4j() for n in loggers)
    assert all(f"      - name: {n}\n        level: DEBUG\n" in SHARE_MEMBER.log4j2() for n in loggers)
    assert "TransactionManager" not in SHARE_MEMBER.log4j2()
    bare = JavaProgram(Path("X.java"), "X", "/opt/x", "x", (), ())
    assert "Logger:" not in bare.log4j2() and "log4j.logger." not in bare.log4j()


def test_the_transactional_producer_kept_its_log_config_and_places():
    assert TXN_PRODUCER.log4j2().endswith(
        "    Logger:\n      - name: org.apache.kafka.clients.producer.internals.TransactionManager\n"
        "        level: DEBUG\n")
    assert TXN_PRODUCER.classpath == "/opt/harness-txn/TxnProducer.jar:/opt/kafka/libs/*"
    assert SHARE_MEMBER.classpath == "/opt/harness-share/ShareMember.jar:/opt/kafka/libs/*"


def test_share_member_run_opts_map_its_own_class_archive(tmp_path):
    assert "-XX:SharedArchiveFile" not in run_opts(SHARE_MEMBER, tmp_path)
    (tmp_path / "ShareMember.jsa").write_bytes(b"")
    opts = run_opts(SHARE_MEMBER, tmp_path, "-Dx=1").split()
    assert "-XX:SharedArchiveFile=/opt/harness-share/ShareMember.jsa" in opts and opts[-1] == "-Dx=1"


class _Container:
    """What _follow asks of a container (reload, status, attrs, kill): one that ends
    when it is sent a signal, with the shell's exit code for it."""

    def __init__(self):
        self.signals: list[str] = []
        self.status, self.attrs = "running", {"State": {"ExitCode": None}}

    def reload(self):
        if self.signals:
            self.status = "exited"
            self.attrs["State"]["ExitCode"] = {"SIGKILL": 137, "SIGTERM": 0}[self.signals[0]]

    def kill(self, signal):
        self.signals.append(signal)


@pytest.mark.parametrize("how, signal, code", [("kill", "SIGKILL", 137), ("stop", "SIGTERM", 0)])
def test_follow_kills_at_once_or_stops_cleanly(tmp_path, how, signal, code):
    events = tmp_path / "events.jsonl"
    events.write_text('{"ev":"start"}\n{"ev":"clo')
    c, lines = _Container(), []
    exit_code, stop_sent_at = _follow(c, events, lines.append, 0.0, 3600,
                                      should_stop=lambda: how == "stop", should_kill=lambda: how == "kill")
    assert c.signals == [signal] and exit_code == code and stop_sent_at is not None
    assert lines[0] == '{"ev":"start"}' and '{"ev":"clo' in lines       # the unfinished line too, at the end


def test_follow_counts_a_kill_made_by_its_caller_as_ours(tmp_path):
    events = tmp_path / "events.jsonl"
    events.write_text("")
    c = _Container()
    c.signals.append("SIGKILL")                 # JavaShareMember.kill() through on_container
    exit_code, stop_sent_at = _follow(c, events, lambda _: None, 0.0, 3600, None, should_kill=lambda: True)
    assert exit_code == 137 and stop_sent_at is not None and c.signals == ["SIGKILL"]


class _DeafAtFirst(_Container):
    """A container whose PID 1 has no SIGTERM handler yet (`sh`, or a JVM still starting):
    the first SIGTERM is dropped, as the kernel drops it for PID 1 (seen with docker:
    `sh -c 'sleep 4; …'` ran on after `docker kill -s TERM`); the next one ends it."""

    def reload(self):
        if self.signals[1:] or self.signals[:1] == ["SIGKILL"]:
            self.status = "exited"
            self.attrs["State"]["ExitCode"] = {"SIGKILL": 137, "SIGTERM": 0}[self.signals[-1]]


def test_follow_sends_sigterm_again_until_the_program_ends(tmp_path, monkeypatch):
    from workloads import java_clients
    monkeypatch.setattr(java_clients, "TERM_AGAIN_S", 0.2)
    events = tmp_path / "events.jsonl"
    events.write_text("")
    c = _DeafAtFirst()
    exit_code, stop_sent_at = _follow(c, events, lambda _: None, 0.0, 3600, should_stop=lambda: True,
                                      should_kill=lambda: False)
    assert c.signals == ["SIGTERM", "SIGTERM"] and exit_code == 0 and stop_sent_at is not None
