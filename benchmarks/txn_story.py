"""One run's transactional story for a maintainer: the fatal client error (or the
torn transaction), the faults around it, the failing transaction's records, the
client's and the coordinator's log lines around it.

    python benchmarks/txn_story.py runs/<id> [--window 6]

Times are seconds after load-start.
"""
from __future__ import annotations

import argparse
import json
import re
from datetime import UTC, datetime
from pathlib import Path

from core.history import read_table

# librdkafka's (debug: eos) and the Java client's lines that decide a transaction's end,
# not every state change of every healthy transaction
CLIENT_LINE = re.compile(r"ENDTXN|epoch bump|INVALID|FATAL|timed out|TXNERR|AddPartitionsToTxn response|"
                         r"Ignoring outdated|-> (AbortableError|AbortingTransaction|FatalError)|"
                         r"abortable|InitProducerId|Transiting", re.I)
QUIET_LINE = re.compile(r"NO_ERROR|APIRESULT|: Success")
# the coordinator's decisions (cluster.log_levels kafka.coordinator.transaction: DEBUG),
# not its routine state updates and marker round trips
BROKER_LINE = re.compile(r"Returning|but received|Aborting append|INVALID|FENCED|PrepareAbort|"
                         r"PrepareEpochFence|Initialized transactionalId|bump|timed out", re.I)


def _t(us: int, t0: int) -> str:
    return f"{(us - t0) / 1e6:+.1f} s"


def story(run_dir: Path, window_s: float) -> str:
    events = read_table(run_dir, "events").to_pandas().sort_values("ts_us")
    t0 = int(events[(events.kind == "phase") & (events.name == "load-start")].ts_us.min())
    out = []
    faults = json.loads((run_dir / "faults.json").read_text())
    for f in faults:
        out.append(f"fault {f['label']}: targets {f['targets']}, injected {f['injected_s']} s, "
                   f"healed {f['healed_s']} s")
    fatal = events[(events.kind == "client") & (events.name == "client-fatal")]
    produced = read_table(run_dir, "produced").to_pandas()
    for _, e in fatal.iterrows():
        d = json.loads(e.detail)
        out.append(f"\nclient-fatal at {_t(e.ts_us, t0)}: {e.target} {d}")
        txn = produced[(produced.producer == e.target) & (produced.txn_seq == d.get("txn_seq"))]
        out.append(txn[["record_id", "partition", "offset", "status", "error", "txn_outcome"]]
                   .to_string(index=False))
        around = events[(events.kind.isin(["client", "fault", "heal"]))
                        & (abs(events.ts_us - e.ts_us) < window_s * 1e6)]
        for _, a in around.iterrows():
            out.append(f"  {_t(a.ts_us, t0)} {a.kind} {a['name']} {a.target} {a.detail[:200]}")
        out += _log_lines(run_dir, e.ts_us, window_s)
    return "\n".join(out)


def _log_lines(run_dir: Path, at_us: int, window_s: float) -> list[str]:
    """librdkafka's lines (its own timestamps) and the brokers' coordinator lines near it."""
    out = []
    for log in sorted((run_dir / "workloads").glob("*.log")):
        for line in log.read_text(errors="replace").splitlines():
            m = re.match(r"%\d\|(\d+\.\d+)\|", line)
            if m and abs(float(m.group(1)) * 1e6 - at_us) < window_s * 1e6 and CLIENT_LINE.search(line) \
                    and not QUIET_LINE.search(line):
                out.append(f"  client {log.name}: {line[:300]}")
    for log in sorted((run_dir / "logs").glob("kafka-*.log")):
        for line in log.read_text(errors="replace").splitlines():
            m = re.match(r"\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})\]", line)
            if not m or "ransaction" not in line or not BROKER_LINE.search(line):
                continue
            ts = datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S,%f").replace(tzinfo=UTC).timestamp()
            if abs(ts * 1e6 - at_us) < window_s * 1e6:
                out.append(f"  broker {log.stem}: {line[:300]}")
    return out


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("run_dir")
    ap.add_argument("--window", type=float, default=6.0)
    a = ap.parse_args()
    print(story(Path(a.run_dir), a.window))
