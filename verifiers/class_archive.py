"""`python -m verifiers.class_archive [--force]`: write the Spark driver's class
archive (spark_reports/class_cache.py) by verifying a small history with an anomaly
of most kinds, so that the training run loads the classes a real verify loads.
scripts/setup.sh runs it when HARNESS_SETUP_CLASS_ARCHIVE=1; the file is cached afterwards."""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from core.history import HistoryWriter, record_id
from spark_reports import class_cache
from spark_reports.session import spark_session
from verifiers.verify import verify_run


def _training_history(run_dir: str) -> None:
    """A few hundred records with an anomaly of most kinds, a fault and a leader
    change, so that the training run loads the classes a real verify loads."""

    t0 = 1_700_000_000_000_000
    w = {t: HistoryWriter(run_dir, t, "training", flush_rows=1 << 30, flush_seconds=1e9)
         for t in ("produced", "consumed", "commits", "events")}
    for seq in range(300):
        rid, ts, off = record_id("p0", seq), t0 + seq * 10_000, seq + (seq >= 150)
        w["produced"].append({"producer": "p0", "seq": seq, "record_id": rid, "topic": "t",
                              "partition": 0, "offset": off, "status": "acked",
                              "send_ts_us": ts, "ack_ts_us": ts + 2_000})
        for phase, poll in (("run", (seq, 1)), ("drain", (seq, None))):
            if seq % 97 == 5 or (phase == "run" and seq == 200):
                continue        # lost, then skipped by the run consumer
            w["consumed"].append({"consumer": "c0" if phase == "run" else "drain",
                                  "group_id": "g0" if phase == "run" else None,
                                  "phase": phase, "topic": "t", "partition": 0,
                                  "offset": off, "record_id": rid, "isolation": "read_committed",
                                  "recv_ts_us": ts + 5_000, "poll_seq": poll[0],
                                  "assignment": poll[1]})
    w["consumed"].append({"consumer": "c0", "group_id": "g0", "phase": "run", "topic": "t",
                          "partition": 0, "offset": 150, "record_id": "ghost-0",
                          "isolation": "read_committed", "recv_ts_us": t0, "poll_seq": 300,
                          "assignment": 1})
    w["commits"].append({"consumer": "c0", "group_id": "g0", "topic": "t", "partition": 0,
                         "offset": 301, "ok": True, "ts_us": t0 + 3_100_000})
    for kind, ts in (("fault", t0 + 1_000_000), ("heal", t0 + 2_000_000)):
        w["events"].append({"ts_us": ts, "kind": kind, "name": "pause", "target": "kafka-1",
                            "detail": json.dumps({"fault_id": "f0"})})
    w["events"].append({"ts_us": t0 + 1_500_000, "kind": "observe", "name": "leader",
                        "target": "kafka-2",
                        "detail": json.dumps({"topic": "t", "partition": 0, "leader": 2})})
    for writer in w.values():
        writer.close()


def _dump(tmp: Path) -> None:
    """Verify a small history in a JVM that writes its classes to tmp when it exits,
    and wait for that exit (the archive is complete only then)."""
    # pyspark's gateway: after the session started, to wait for its JVM
    from pyspark import SparkContext


    with tempfile.TemporaryDirectory(prefix="harness-cds-") as run_dir:
        _training_history(run_dir)
        spark, _ = spark_session(dump_classes_to=tmp)
        try:
            verify_run(run_dir, spark=spark)
        finally:
            spark.stop()
            proc = SparkContext._gateway.proc if SparkContext._gateway else None
            if proc is not None:
                proc.stdin.close()      # the JVM exits when its stdin closes
                proc.wait(timeout=600)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m verifiers.class_archive",
                                 description="write the Spark driver's class archive")
    ap.add_argument("--force", action="store_true", help="rewrite it even if it exists")
    args = ap.parse_args(argv)
    if not class_cache.enabled():
        print("class archive: turned off (HARNESS_SPARK_CDS=0)")
        return 0
    existed = class_cache.archive_path().is_file()
    path = class_cache.build(force=args.force, dump=_dump)
    print(f"class archive: {path} ({'kept' if existed and not args.force else 'written'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
