"""Transactions with a 20% abort rate: a read_committed consumer sees no record of an
aborted transaction, a read_uncommitted one does; consume-transform-produce commits
each input record's output exactly once."""
import json
import time

from wl_history_check import table

from workloads.consumer import ConsumerGroup
from workloads.drain import drain
from workloads.producer import ProducerProcess
from workloads.spec import ConsumerGroupSpec, DrainSpec, ProducerSpec

N = 4000


def _wait_consumed(run_dir: str, group: str, n: int, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        c = table(run_dir, "consumed")
        mine = c[c.group_id == group] if len(c) else c
        if len(mine) and len(mine.drop_duplicates(["partition", "offset"])) >= n:
            return
        time.sleep(1)


def test_aborted_transactions_visible_only_to_read_uncommitted(run):
    topic = run.topic(3)
    spec = ProducerSpec(name="t0", topic=topic, records=N, seed=7,
                        transactions={"records_per_txn": 50, "abort_rate": 0.2})
    groups = [ConsumerGroup(ConsumerGroupSpec(group_id=f"{topic}-{iso}", topics=topic,
                                              isolation=iso, name_prefix=f"c{iso[5]}"), run) for iso in ("read_committed", "read_uncommitted")]
    p = ProducerProcess(spec, run)
    try:
        for g in groups:
            g.start()
        p.start()
        assert p.wait(180), "transactional producer did not finish"
        assert p.exitcode == 0
        produced = table(run.dir, "produced")
        committed = produced[produced.txn_outcome == "committed"]
        # the read_uncommitted group sees every record; read_committed only committed ones
        _wait_consumed(run.dir, groups[1].spec.group_id, N)
        _wait_consumed(run.dir, groups[0].spec.group_id, len(committed))
    finally:
        for g in groups:
            g.stop()
        if p.is_alive():
            p.kill()

    assert len(produced) == N and produced.txn_id.notna().all()
    by_txn = produced.groupby("txn_seq").txn_outcome.agg(set)
    assert all(len(s) == 1 for s in by_txn)                # one outcome per transaction
    outcomes = produced.drop_duplicates("txn_seq").txn_outcome.value_counts()
    assert outcomes.get("aborted", 0) > 0 and outcomes.get("committed", 0) > 0
    assert set(produced.txn_outcome) <= {"committed", "aborted"}
    aborted = produced[produced.txn_outcome == "aborted"]
    assert (aborted.status == "failed").all() and aborted.offset.isna().all()
    assert (committed.status == "acked").all() and committed.offset.notna().all()

    consumed = table(run.dir, "consumed")
    rc = consumed[consumed.isolation == "read_committed"]
    ru = consumed[consumed.isolation == "read_uncommitted"]
    aborted_ids = set(aborted.record_id)
    assert not (set(rc.record_id) & aborted_ids), "read_committed saw an aborted record"
    assert set(rc.record_id) == set(committed.record_id)
    assert set(ru.record_id) & aborted_ids, "read_uncommitted saw no aborted record"
    assert set(ru.record_id) == set(produced.record_id)

    r = drain(DrainSpec(topics=topic, isolation="read_committed"), run)
    assert r.complete and r.records == len(committed), r
    d = table(run.dir, "consumed")
    assert set(d[d.phase == "drain"].record_id) == set(committed.record_id)


def test_consume_transform_produce_commits_each_input_once(run):
    src, out = run.topic(3), run.topic(3)
    n = 1000
    feeder = ProducerProcess(ProducerSpec(name="f0", topic=src, records=n), run)
    ctp = ProducerProcess(ProducerSpec(name="x0", topic=out, seed=3, duration_s=300,
                                       transactions={"records_per_txn": 50, "abort_rate": 0.3,
                                                     "input_topic": src,
                                                     "input_group": f"{src}-ctp"}), run)
    try:
        feeder.start()
        assert feeder.wait(120) and feeder.exitcode == 0
        ctp.start()
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            p = table(run.dir, "produced")
            if len(p) and (p[p.producer == "x0"].txn_outcome == "committed").sum() >= n:
                break
            time.sleep(1)
        ctp.stop(60)
        assert ctp.exitcode == 0
    finally:
        for x in (feeder, ctp):
            if x.is_alive():
                x.kill()
    produced = table(run.dir, "produced")
    out_rows = produced[produced.producer == "x0"]
    assert (out_rows.txn_outcome == "aborted").any()
    assert (out_rows.txn_outcome == "committed").sum() == n    # exactly once, despite aborts
    commits = table(run.dir, "commits")
    mine = commits[commits.group_id == f"{src}-ctp"]
    assert mine.ok.any() and (~mine.ok).any()                  # aborted txns' offsets rejected
    assert mine[mine.ok].groupby("partition").offset.max().sum() == n
    r = drain(DrainSpec(topics=out, isolation="read_committed"), run)
    assert r.complete and r.records == n
    ev = table(run.dir, "events")
    txns = [json.loads(d) for d in ev[ev.name == "transaction"].detail]
    assert {t["outcome"] for t in txns} == {"committed", "aborted"}
