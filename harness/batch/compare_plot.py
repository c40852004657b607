"""The compare report's plot: throughput and p99 ack latency of every variant over time.

Computed from each run's stored history (history/produced/*.parquet, read with
pyarrow, only the three columns needed), not from summary.json, so the curves
are what the records say. Time 0 of each run is its first fault's injection
(or its first send when it has no fault): the variants share one fault
timeline, so aligned there their fault bands coincide and a reader compares
the same moment of the experiment.
"""
from __future__ import annotations

import base64
import io
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf")


def per_second(run_dir: Path, t0_us: int | None = None) -> dict[str, list]:
    """Acked records per second and the p99 ack latency (ms) of the records acked in that
    second, keyed by seconds since t0 (default: the first send)."""
    produced = Path(run_dir) / "history" / "produced"
    empty: dict[str, list] = {"second": [], "acked": [], "p99_ms": []}
    if not produced.is_dir() or not any(produced.glob("*.parquet")):
        return empty
    table = ds.dataset(produced, format="parquet").to_table(
        columns=["status", "send_ts_us", "ack_ts_us"])
    if t0_us is None:
        t0_us = pc.min(table["send_ts_us"]).as_py()
    table = table.filter(pc.and_(pc.equal(table["status"], "acked"), pc.is_valid(table["ack_ts_us"])))
    if table.num_rows == 0 or t0_us is None:
        return empty
    second = pc.floor(pc.divide(pc.cast(pc.subtract(table["ack_ts_us"], t0_us), "float64"), 1e6))
    latency = pc.divide(pc.cast(pc.subtract(table["ack_ts_us"], table["send_ts_us"]), "float64"), 1e3)
    grouped = pa.table({"second": second, "latency": latency}).group_by("second").aggregate(
        [("latency", "count"), ("latency", "tdigest", pc.TDigestOptions(q=0.99))]).sort_by("second")
    return _dense(grouped["second"].to_pylist(), grouped["latency_count"].to_pylist(),
                  [q[0] if q else None for q in grouped["latency_tdigest"].to_pylist()])


def _dense(seconds: list[float], acked: list[int], p99: list[float | None]) -> dict[str, list]:
    """Every second from the first to the last: a second without an ack is a 0 in the
    throughput and a gap (NaN) in the latency, not a line drawn across the outage."""
    if not seconds:
        return {"second": [], "acked": [], "p99_ms": []}
    count = dict(zip(seconds, acked))
    q = dict(zip(seconds, p99))
    span = [float(s) for s in range(int(seconds[0]), int(seconds[-1]) + 1)]
    return {"second": span, "acked": [count.get(s, 0) for s in span],
            "p99_ms": [float("nan") if q.get(s) is None else q[s] for s in span]}


def fault_bands(run_dir: Path) -> tuple[int | None, list[tuple[int, int | None, str]]]:
    """(the first injection, every fault's (start_us, end_us, name)) from the run's summary."""
    path = Path(run_dir) / "report" / "summary.json"
    if not path.is_file():
        return None, []
    metrics = json.loads(path.read_text()).get("metrics") or {}
    windows = sorted(metrics.get("fault_windows") or [], key=lambda w: w.get("start_us") or 0)
    bands = [(w["start_us"], w.get("end_us"), str(w.get("name"))) for w in windows if w.get("start_us")]
    return (bands[0][0] if bands else None), bands


def series_of(run_dir: Path) -> dict:
    t0, bands = fault_bands(run_dir)
    data = per_second(run_dir, t0)
    base = t0 if t0 is not None else 0
    data["bands"] = [((s - base) / 1e6, None if e is None else (e - base) / 1e6, n) for s, e, n in bands] \
        if t0 is not None else []
    data["aligned_on"] = "first fault injection" if t0 is not None else "first send"
    return data


def plot(series: dict[str, list[dict]]) -> str | None:
    """variant -> [series of each repeat] into one PNG (two panels), as a data: URI."""
    if not any(s["second"] for runs in series.values() for s in runs):
        return None
    # matplotlib: only when a plot is drawn
    import matplotlib
    matplotlib.use("Agg")           # no display on a CI runner or a server
    import matplotlib.pyplot as plt
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(11, 6.5), sharex=True)
    for i, (variant, runs) in enumerate(series.items()):
        color = COLORS[i % len(COLORS)]
        for k, s in enumerate(runs):
            label = variant if k == 0 else None
            alpha = 1.0 if k == 0 else 0.45
            top.plot(s["second"], s["acked"], color=color, alpha=alpha, lw=1.2, label=label)
            bottom.plot(s["second"], s["p99_ms"], color=color, alpha=alpha, lw=1.2, label=label)
            for start, end, _name in s["bands"]:
                for ax in (top, bottom):
                    ax.axvspan(start, end if end is not None else max(s["second"], default=start),
                               color=color, alpha=0.07)
    _annotate(top, bottom, series)
    buf = io.BytesIO()
    fig.tight_layout()
    fig.savefig(buf, format="png", dpi=90)
    plt.close(fig)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


def _annotate(top, bottom, series: dict[str, list[dict]]) -> None:
    first = next((s for runs in series.values() for s in runs), None)
    for start, _end, name in (first or {}).get("bands", []):
        top.annotate(name, (start, 1.0), xycoords=("data", "axes fraction"), fontsize=8,
                     va="top", ha="left")
    top.set_ylabel("acked records / s")
    bottom.set_ylabel("p99 ack latency (ms)")
    bottom.set_yscale("symlog", linthresh=10)
    aligned = (first or {}).get("aligned_on", "first send")
    bottom.set_xlabel(f"seconds since the {aligned} (shaded: fault active)")
    top.legend(loc="lower right", fontsize=8)
    top.grid(alpha=0.3)
    bottom.grid(alpha=0.3)
