"""`harness verify RUN_DIR [--spark-master URL] [--expect FILE]`."""
from __future__ import annotations

import sys
import traceback

from harness.errors import HarnessError


def verify_command(run_dir: str, spark_master: str | None, expect: str | None) -> int:
    """Reconcile a run, print the verdict, return 0 passed / 1 failed / 2 unknown."""
    from spark_reports.verify import verify_run

    try:
        result = verify_run(run_dir, spark_master=spark_master, expect=expect)
    except HarnessError:
        raise
    except Exception as e:  # noqa: BLE001 - a crash means "could not judge" (2), never "failed" (1)
        traceback.print_exc()
        raise HarnessError(f"verify could not judge {run_dir}: {type(e).__name__}: "
                           f"{str(e).splitlines()[0] if str(e) else ''}") from e
    s, v = result.summary, result.verdict
    an = s.get("anomalies") or {}
    print(f"run {s.get('run_id')}: {v.status.upper()}")
    if s.get("counts"):
        c = s["counts"]
        print("  counts: " + ", ".join(f"{k} {c[k]}" for k in
                                       ("sent", "acked", "failed", "indeterminate", "consumed")))
    if an:
        print("  anomalies: " + ", ".join(f"{k} {n}" for k, n in an.items()))
    if v.reason:
        print(f"  unknown: {v.reason}")
    for f in v.failures:
        print(f"  FAIL {f}")
    for n in v.not_judged:
        print(f"  note {n}")
    print(f"  report: {result.report_dir}/index.html")
    sys.stdout.flush()
    return v.exit_code
