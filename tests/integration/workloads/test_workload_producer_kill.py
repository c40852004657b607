"""A producer process SIGKILLed mid-run: its in-flight records are `indeterminate`,
none is missing from the history, and nothing acked is lost."""
import time

from wl_history_check import lost, table

from core.history import part_files
from workloads.drain import drain
from workloads.producer import ProducerProcess
from workloads.spec import DrainSpec, ProducerSpec


def test_killed_producer_in_flight_records_are_indeterminate(run):
    topic = run.topic(3)
    spec = ProducerSpec(name="p0", topic=topic, records=10_000_000, rate=20_000, linger_ms=20)
    p = ProducerProcess(spec, run).start()
    try:
        # kill once acks are flowing (a first part file exists), plus a second
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not part_files(run.dir, "produced"):
            time.sleep(0.2)
        assert part_files(run.dir, "produced"), "no delivery report within 60 s"
        time.sleep(1)
        assert p.is_alive()
        res = p.kill()
    finally:
        if p.is_alive():
            p.kill()
    assert not p.is_alive() and p._worker.exitcode == -9
    produced = table(run.dir, "produced")
    # every seq handed to the client has exactly one row
    assert res.announced > 1000
    assert sorted(produced.seq) == list(range(res.announced))
    assert produced.record_id.is_unique
    indet = produced[produced.status == "indeterminate"]
    assert len(indet) == res.indeterminate > 0
    assert (indet.error == "NO_DELIVERY_REPORT").all() and indet.offset.isna().all()
    # the unreported ones are the latest seqs (in flight or unflushed at the kill)
    acked = produced[produced.status == "acked"]
    assert len(acked) > 0 and indet.seq.min() > acked.seq.min()

    result = drain(DrainSpec(topics=topic), run)
    assert result.complete, result
    consumed = table(run.dir, "consumed")
    assert not lost(produced, consumed)
    # whatever the log holds was sent by p0 and is in the history
    assert set(consumed.record_id) <= set(produced.record_id)
    # some indeterminate records did reach the log (the kill hid their acks)
    recovered = set(indet.record_id) & set(consumed.record_id)
    assert len(recovered) + len(acked) == len(consumed)


def test_every_ack_names_the_leader_and_a_producer_that_dies_is_a_death(run):
    """acked_by on a real cluster: with no fault, every acknowledged record names its
    partition's leader. A producer ended by a signal nobody in the harness sent (here a
    SIGTERM from outside) is a death the checker counts; the harness's own kill is not."""
    import os
    import signal

    from core.history import read_table
    from core.timeline import parse_events
    from spark_reports.problems import workload_deaths

    topic = run.topic(3)
    leaders = {p.partition: p.leader for p in run.cluster.partitions(topic)}
    ours = ProducerProcess(ProducerSpec(name="p0", topic=topic, records=3000, rate=3000), run)
    assert ours.start().wait(120)
    produced = table(run.dir, "produced")
    acked = produced[produced.status == "acked"]
    assert len(acked) == 3000
    assert {(int(p), int(b)) for p, b in zip(acked.partition, acked.acked_by, strict=True)} == \
        set(leaders.items())
    dying = ProducerProcess(ProducerSpec(name="p1", topic=topic, records=10_000_000, rate=1000), run)
    killed = ProducerProcess(ProducerSpec(name="p2", topic=topic, records=10_000_000, rate=1000), run)
    dying.start(), killed.start()
    time.sleep(3)
    os.kill(dying.pid, signal.SIGTERM)
    assert dying.wait(30) and dying.exitcode == -signal.SIGTERM
    killed.kill()
    run.events.flush()
    deaths = workload_deaths(parse_events(read_table(run.dir, "events").to_pylist(), None))
    assert [(d["workload"], d["exitcode"]) for d in deaths] == [("p1", -signal.SIGTERM)]
