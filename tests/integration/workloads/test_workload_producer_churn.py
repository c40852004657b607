"""Producer churn (ProducerSpec.churn) on a real cluster: a transactional producer
killed every few seconds comes back as `p0.1`, `p0.2` … with the same
transactional.id; record_ids stay unique, the killed ones' unknown outcomes are
indeterminate, and a read_committed drain reads every committed record and no
aborted one (the successor's fencing aborted what the killed one left open)."""
import json

from wl_history_check import table

from workloads.drain import drain
from workloads.producer_churn import start_producer
from workloads.spec import DrainSpec, ProducerSpec


def test_a_killed_transactional_producer_comes_back_under_a_new_name_and_fences(run):
    topic = run.topic(3)
    spec = ProducerSpec(name="p0", topic=topic, rate=400, duration_s=20, seed=5,
                        transactions={"records_per_txn": 50, "abort_rate": 0.2},
                        churn={"every_s": 5.0, "how": "kill", "down_s": 0.5, "first_s": 4.0})
    p = start_producer(spec, run)
    try:
        assert p.wait(120), "the churning producer did not finish its duration"
    finally:
        p.stop(30)
    assert p.exitcode == 0 and p.result is not None
    names = [i.spec.name for i in p.incarnations]
    assert len(names) >= 3 and names[:3] == ["p0", "p0.1", "p0.2"], names
    assert len({i.txn_id for i in p.incarnations}) == 1          # one transactional.id: fencing

    produced = table(run.dir, "produced")
    assert set(produced.producer) == set(names)
    assert produced.record_id.is_unique
    assert p.result.announced == len(produced)
    killed = produced[produced.producer.isin(names[:-1])]
    assert (killed.status == "indeterminate").any()              # in flight at each kill
    assert (produced.txn_outcome == "committed").any() and (produced.txn_outcome == "aborted").any()

    r = drain(DrainSpec(topics=topic, isolation="read_committed", timeout_s=90), run)
    assert r.complete, r                                        # no transaction left open
    d = table(run.dir, "consumed")
    read = set(d[d.phase == "drain"].record_id)
    assert set(produced[produced.status == "acked"].record_id) <= read
    assert not read & set(produced[produced.txn_outcome == "aborted"].record_id)

    run.events.close()
    ev = table(str(run.dir), "events")
    restarts = [json.loads(x) for x in ev[ev.name == "producer-restart"].detail]
    assert [x["producer"] for x in restarts] == names[1:]
    assert (ev.name == "producer-crash").sum() == len(names) - 1
