"""A Java share member's stdout becomes the same journal a librdkafka member writes (the
one converter reads both); its `recv` lines tell the drain when it last received."""
from __future__ import annotations

import json
import time
from types import SimpleNamespace

from families.shares.clients import JavaWorker
from families.shares.section import share_group
from workloads.share_log import journal_path


def test_java_lines_go_to_the_members_journal(tmp_path):
    ctx = SimpleNamespace(dir=str(tmp_path), seed=3, run_id="r", bootstrap="x:9092")
    g = share_group(0, {"client": "java", "ack_mode": "explicit", "release_rate": 0.1}, "q")
    w = JavaWorker(g, ctx, "s0", accept_all=False, clients_version=None)
    assert (w.member.spec.mode, w.member.spec.release_rate) == ("explicit", 0.1)
    before = w.last_recv
    time.sleep(0.01)
    w._feed('{"ev": "start", "ts": 1, "member": "s0"}\n')
    w._feed("SLF4J: a line that is not ours\n")
    w._feed('{"ev":"recv","ts":2,"recs":[["q",0,5,1,"p0-5 x"]]}')
    assert w.last_recv > before
    w.journal.close()
    w._feed('{"ev":"recv","ts":3,"recs":[]}')          # a late line after the stop: dropped
    lines = journal_path(tmp_path, g.group_id, "s0").read_text().splitlines()
    assert [json.loads(x)["ev"] for x in lines] == ["start", "recv"]
    drain = JavaWorker(g, ctx, "drain", accept_all=True, clients_version=None)
    assert (drain.member.spec.mode, drain.member.spec.release_rate, drain.member.spec.ack_send) == (
        "explicit", 0.0, "sync")


def test_a_share_group_is_ready_once_a_member_has_received_a_record(tmp_path):
    from families.shares.clients import ShareWorkloads
    ctx = SimpleNamespace(dir=str(tmp_path), seed=3, run_id="r", bootstrap="x:9092", client_config={})
    g = share_group(0, {}, "q")
    workloads = ShareWorkloads(ctx, SimpleNamespace(share_groups=(g,), duration_s=1, clients_version=None))
    from families.shares.clients import ShareGroup
    group = ShareGroup(g, ctx)
    group.workers["s0"] = None                       # a member known, its journal not yet written
    workloads.groups.append(group)
    assert workloads.not_ready() == ["share group sg0: no member has received a record yet"]
    path = journal_path(tmp_path, g.group_id, "s0")
    path.parent.mkdir(parents=True)
    path.write_text('{"ev":"start","ts":1}\n')
    assert workloads.not_ready()
    path.write_text('{"ev":"start","ts":1}\n{"ev":"recv","ts":2,"recs":[["q",0,0,1,"p0-0"]]}\n')
    assert workloads.not_ready() == []


def test_a_java_member_ended_by_our_stop_or_kill_is_not_a_death(tmp_path):
    from families.shares.clients import JavaWorker
    ctx = SimpleNamespace(dir=str(tmp_path), seed=3, run_id="r", bootstrap="x:9092")
    g = share_group(0, {"client": "java"}, "q")

    def ended(code: int, how: str) -> bool:
        w = JavaWorker(g, ctx, "s0", accept_all=False, clients_version=None)
        # the container's end as JavaShareMember reports it (its own tests: test_java_share)
        w.member = SimpleNamespace(exitcode=code, stop=lambda timeout: True, kill=lambda: True)
        {"stop": w.request_stop, "kill": w.kill, "none": lambda: None}[how]()
        return w.died

    assert not ended(143, "stop")      # SIGTERM before its shutdown hook: a member just restarted
    assert ended(143, "none")          # the same code with no stop of ours: something else ended it
    assert ended(137, "stop")          # it ignored the stop until our SIGKILL: still reported
    assert not ended(137, "kill") and not ended(0, "stop") and ended(3, "stop")
