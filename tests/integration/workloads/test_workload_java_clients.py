"""Kafka's own VerifiableProducer/VerifiableConsumer, run in a container on the
cluster network, converted into the same history and judged by the same
reconciler as our clients."""
from wl_history_check import duplicates_in_drain, lost, table

from verifiers.judgement import Judgement
from verifiers.verify import verify_run
from workloads.drain import drain
from workloads.java_clients import run_java_consumer, run_java_producer
from workloads.spec import DrainSpec

N = 20_000


def _no_containers_left(run) -> bool:
    from clusters.docker_env import docker_client
    return not docker_client().containers.list(
        all=True, filters={"label": [f"harness.run-id={run.run_id}", "harness.role=java-client"]})


def test_java_verifiable_producer_reconciles_like_ours(run, spark):
    topic = run.topic(6)
    run.events.emit("phase", "load-start")
    info = run_java_producer(run, topic=topic, max_messages=N, prefix=5, acks="all")
    run.events.emit("phase", "load-end")
    assert _no_containers_left(run)
    assert info["exit_code"] == 0 and info["tool_data"]["sent"] == N
    assert info["counts"] == {"acked": N, "failed": 0, "indeterminate": 0, "sent": N}
    r = drain(DrainSpec(topics=topic), run)
    run.events.flush()
    assert r.complete and r.records == N

    produced, consumed = table(run.dir, "produced"), table(run.dir, "consumed")
    assert set(produced.producer) == {"j5"} and sorted(produced.seq) == list(range(N))
    assert (produced.status == "acked").all()
    assert not lost(produced, consumed) and duplicates_in_drain(consumed).empty
    d = consumed[consumed.phase == "drain"]
    assert set(d.record_id) == {f"j5-{i}" for i in range(N)}

    v = verify_run(run.dir, Judgement.without_model("unknown: a workload test", html=False), spark=spark)
    assert v.summary["counts"]["acked"] == N
    assert v.summary["anomalies"] == {k: 0 for k in v.summary["anomalies"]}, v.summary["anomalies"]
    assert v.verdict.status == "passed", v.verdict


def test_java_verifiable_consumer_history(run):
    topic = run.topic(3)
    n = 3000
    run_java_producer(run, topic=topic, max_messages=n, prefix=1)
    info = run_java_consumer(run, topic=topic, group_id=f"{topic}-jg", name="jc0",
                             max_messages=n, timeout_s=120)
    run.events.flush()
    assert _no_containers_left(run)
    assert info["exit_code"] == 0 and info["records"] == n
    consumed = table(run.dir, "consumed")
    assert set(consumed.record_id) == {f"j1-{i}" for i in range(n)}
    assert (consumed.consumer == "jc0").all() and (consumed.phase == "run").all()
    commits = table(run.dir, "commits")
    assert commits.ok.all() and commits.groupby("partition").offset.max().sum() == n
    ev = table(run.dir, "events")
    assert "rebalance" in set(ev[ev.target == "jc0"].name)
