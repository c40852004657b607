"""Consumer churn (ConsumerGroupSpec.churn) on a real cluster: members are killed or
closed in turn and come back as new incarnations, every bounce is in the history, and
stopping the group mid-churn leaves no member process behind."""
import json
import time

import pytest
from wl_history_check import table

from core.history import part_files
from workloads.consumer import ConsumerGroup
from workloads.producer import ProducerProcess
from workloads.spec import ChurnSpec, ConsumerGroupSpec, ProducerSpec


def _consumed(run_dir) -> int:
    return len(table(str(run_dir), "consumed")) if part_files(run_dir, "consumed") else 0


@pytest.mark.parametrize("how, down_event", [("kill", "consumer-crash"), ("clean", "consumer-close")])
def test_churn_bounces_members_in_turn_and_stops_cleanly(run, how, down_event):
    topic = run.topic(3)
    churn = ChurnSpec(every_s=5.0, how=how, down_s=0.5, first_s=6.0)
    group = ConsumerGroup(ConsumerGroupSpec(group_id=f"{topic}-g", topics=topic, members=2,
                                            session_timeout_ms=6000, churn=churn), run)
    producer = ProducerProcess(ProducerSpec(name="p0", topic=topic, duration_s=240, rate=500), run)
    try:
        group.start()
        producer.start()
        # until c0, c1, c0 were bounced and something was consumed: waited for, not
        # timed, since a member process takes 2 s (idle machine) to 10 s (loaded) to start
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and not (
                group.incarnations().get("c0", 0) >= 2 and _consumed(run.dir)):
            time.sleep(1.0)
    finally:
        producer.stop()
        group.stop()
    run.events.close()
    ev = table(str(run.dir), "events").sort_values("ts_us")
    client = ev[ev.kind == "client"]
    downs = list(client[client.name == down_event].target)
    restarts = [json.loads(d)["incarnation"] for d in client[client.name == "consumer-restart"].detail]
    assert len(downs) >= 3 and downs[:3] == ["c0", "c1", "c0"], ev[["ts_us", "name", "target"]].to_string()
    assert restarts[:3] == [1, 1, 2], restarts
    assert not [m for m in group.members() if group.alive(m)]     # nothing left running
    assert _consumed(run.dir)
