"""100 000 records, acks=all, idempotent, no fault: the real reconciler finds zero
anomalies and the drain reads every acked record exactly once."""
from wl_history_check import duplicates_in_drain, lost, table

from verifiers.judgement import Judgement
from verifiers.verify import verify_run
from workloads.drain import drain
from workloads.producer import ProducerProcess
from workloads.spec import DrainSpec, ProducerSpec

N = 100_000


def test_clean_run_reconciles_with_zero_anomalies(run, spark):
    topic = run.topic(6)
    run.events.emit("phase", "load-start")
    p = ProducerProcess(ProducerSpec(name="p0", topic=topic, records=N, acks="all",
                                     enable_idempotence=True), run).start()
    try:
        assert p.wait(300), "producer did not finish 100k records in 300 s"
    finally:
        if p.is_alive():
            p.kill()
    run.events.emit("phase", "load-end")
    assert p.exitcode == 0
    assert p.result.announced == N and p.result.indeterminate == 0
    result = drain(DrainSpec(topics=topic), run)
    run.events.flush()
    assert result.complete and result.records == N, result

    produced, consumed = table(run.dir, "produced"), table(run.dir, "consumed")
    assert len(produced) == N and produced.record_id.is_unique
    assert (produced.status == "acked").all() and produced.offset.notna().all()
    assert sorted(produced.seq) == list(range(N))
    assert not lost(produced, consumed)
    assert duplicates_in_drain(consumed).empty
    drained = consumed[consumed.phase == "drain"]
    assert len(drained) == N and drained.record_id.is_unique
    # every record sits where its delivery report said it was written
    pos = produced.set_index("record_id")[["partition", "offset"]].sort_index()
    seen = drained.set_index("record_id")[["partition", "offset"]].sort_index()
    assert (pos.partition.astype(int).values == seen.partition.astype(int).values).all()
    assert (pos.offset.astype(int).values == seen.offset.astype(int).values).all()

    v = verify_run(run.dir, Judgement.without_model("unknown: a workload test", html=False), spark=spark)
    assert v.summary["counts"]["acked"] == N and v.summary["counts"]["sent"] == N
    assert v.summary["anomalies"] == {k: 0 for k in v.summary["anomalies"]}, v.summary["anomalies"]
    assert v.verdict.status == "passed", v.verdict
