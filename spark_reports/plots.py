"""The report's plots, as PNG bytes (matplotlib, no display needed).

All share one time axis: seconds since the run's first send. Faults are shaded
bands, the way Jepsen draws nemesis activity, coloured by fault kind (`fault_colours`:
a fault's name in the history -> its colour, given by the caller, as faults/ owns the
kinds; a name not in it, or none given, is drawn in a neutral grey); brokers have
one colour each, fixed by broker id, the same in every report. Red is kept for
unavailability alone. Legends sit outside the data, and a second with no data is a
gap in its line, not a straight line across it.
"""
from __future__ import annotations

import io
import math
from collections.abc import Mapping

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from families import KINDS  # noqa: E402

# Broker colours by id (id % 10): tab10 without its red, which means "unavailable".
BROKER_COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2",
                 "#7f7f7f", "#bcbd22", "#17becf", "#393b79")
UNAVAILABLE = "#d6604d"
OTHER_FAULT = "#d9d9d9"        # a fault with no colour of its own
LEGEND = {"loc": "upper left", "bbox_to_anchor": (1.01, 1.0), "fontsize": 8, "frameon": False}
WIDTH_IN = 12.5      # at dpi 90 with the legend beside it: about 1 300 px


def broker_color(broker_id) -> str:
    try:
        return BROKER_COLORS[int(broker_id) % len(BROKER_COLORS)]
    except (TypeError, ValueError):
        return OTHER_FAULT


def fault_color(name: str, fault_colours: Mapping[str, str] | None = None) -> str:
    return (fault_colours or {}).get(name, OTHER_FAULT)


def _png(fig) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight")
    plt.close(fig)
    return buf.getvalue()


def _fault_bands(ax, faults: list[dict], t0_us: int,
                 fault_colours: Mapping[str, str] | None) -> None:
    shown: set[str] = set()
    for f in faults:
        if f.get("inject_error"):       # not injected: it had no window
            continue
        family = f["name"].split("-")[0]
        ax.axvspan((f["start_us"] - t0_us) / 1e6, (f["end_us"] - t0_us) / 1e6,
                   color=fault_color(f["name"], fault_colours), alpha=0.45, lw=0,
                   label=f"fault: {family}" if family not in shown else None)
        shown.add(family)


def _series(per_second: list[dict], key: str, t0_us: int) -> tuple[list[float], list[float]]:
    """x, y for every second from the first to the last, NaN where a second has no value
    (matplotlib draws a gap there)."""
    if not per_second:
        return [], []
    by = {s["second"]: s.get(key) for s in per_second}
    first, last = min(by), max(by)
    xs = [s - t0_us / 1e6 for s in range(first, last + 1)]
    ys = [math.nan if by.get(s) is None else float(by[s]) for s in range(first, last + 1)]
    return xs, ys


def _axes(title: str, ylabel: str, height: float = 3.2):
    fig, ax = plt.subplots(figsize=(WIDTH_IN, height))
    ax.set_title(title)
    ax.set_ylabel(ylabel)
    ax.set_xlabel("seconds since the first send")
    ax.grid(alpha=0.3)
    return fig, ax


def throughput_png(per_second: list[dict], faults: list[dict], t0_us: int, *,
                   fault_colours: Mapping[str, str] | None = None) -> bytes:
    fig, ax = _axes("Throughput", "records / s")
    for key, color in (("sent", "#999999"), ("acked", "#1b7837"), ("consumed", "#2166ac")):
        ax.plot(*_series(per_second, key, t0_us), lw=1, color=color, label=key)
    _fault_bands(ax, faults, t0_us, fault_colours)
    ax.legend(**LEGEND)
    return _png(fig)


SERIES_COLOURS = ("#2166ac", "#1b7837", "#e08214", "#b2182b", "#762a83", "#999999")


def series_png(title: str, ylabel: str, per_second: list[dict], keys: tuple[str, ...],
               faults: list[dict], t0_us: int, *,
               fault_colours: Mapping[str, str] | None = None) -> bytes | None:
    """A family's series (Family.series) per second, with the fault bands."""
    if not per_second:
        return None
    # counts: a second with no row had none (drawn as 0, not as a gap)
    by = {r["second"]: r for r in per_second}
    rows = [{"second": sec, **{k: by.get(sec, {}).get(k, 0) for k in keys}}
            for sec in range(min(by), max(by) + 1)]
    fig, ax = _axes(title, ylabel)
    for key, color in zip(keys, SERIES_COLOURS, strict=False):
        ax.plot(*_series(rows, key, t0_us), lw=1, color=color, label=key)
    _fault_bands(ax, faults, t0_us, fault_colours)
    ax.legend(**LEGEND)
    return _png(fig)


def latency_png(per_second: list[dict], faults: list[dict], t0_us: int, *,
                fault_colours: Mapping[str, str] | None = None) -> bytes:
    fig, ax = _axes("Ack latency per second (by ack time); a gap: no ack that second",
                    "ack latency (ms)")
    has = False
    for key, color, label in (("ack_p50_ms", "#1b7837", "p50"), ("ack_p99_ms", "#e08214", "p99"),
                              ("ack_max_ms", "#542788", "max")):
        xs, ys = _series(per_second, key, t0_us)
        has = has or any(not math.isnan(y) for y in ys)
        ax.plot(xs, [max(y, 0.001) if not math.isnan(y) else y for y in ys], lw=1, color=color,
                label=label)
    _fault_bands(ax, faults, t0_us, fault_colours)
    if has:
        ax.set_yscale("log")
    ax.legend(**LEGEND)
    return _png(fig)


def lag_png(lag: list[dict], faults: list[dict], t0_us: int, *,
            fault_colours: Mapping[str, str] | None = None) -> bytes | None:
    """Consumer lag per second, one line per group: a consumer that stops while
    records wait climbs."""
    if not lag:
        return None
    fig, ax = _axes("Consumer lag per group", "records acked, not yet delivered")
    for g in lag:
        ax.plot(*_series(g["per_second"], "lag", t0_us), lw=1, label=f"group {g['group_id']}")
    _fault_bands(ax, faults, t0_us, fault_colours)
    ax.legend(**LEGEND)
    return _png(fig)


def _anomaly_marks(ax, marks: dict, names: list[str], t0_us: int) -> None:
    """Records of the kinds with a plot mark (lost, overwritten) on their partition's
    row, from the first to the last ack."""
    style = {k.name: k.mark for k in KINDS if k.mark}
    for kind, groups in marks.items():
        color, marker = style[kind]
        for g in groups:
            name = f"{g['topic']}-{g['partition']}"
            if name not in names or g.get("first_ack_us") is None:
                continue
            row = names.index(name)
            xs = [(g["first_ack_us"] - t0_us) / 1e6, (g["last_ack_us"] - t0_us) / 1e6]
            ax.plot(xs, [row - 0.05] * 2, color=color, lw=2, marker=marker, ms=5,
                    label=kind if kind not in ax.get_legend_handles_labels()[1] else None)


def _partition_rows(observations: list[dict], partitions: list[str]) -> list[str]:
    obs = [o for o in observations if o.get("partition") is not None]
    names = {f"{o['topic']}-{o['partition']}" if o.get("topic") else f"?-{o['partition']}"
             for o in obs} | set(partitions)
    return sorted(names, key=lambda n: (n.rsplit("-", 1)[0], int(n.rsplit("-", 1)[1])))


def _segments(mine: list[dict], t0_us: int) -> list[tuple[float, dict]]:
    state: dict = {"leader": None, "isr": None}
    segments = []
    for o in mine:
        if o.get("leader") is not None or o["name"] == "leader":
            state["leader"] = o.get("leader")
        if o.get("isr") is not None:
            state["isr"] = o["isr"]
        # state before the first send is drawn from 0 (the plot starts there)
        segments.append((max(0.0, (o["ts_us"] - t0_us) / 1e6), dict(state)))
    return segments


def leadership_png(observations: list[dict], partitions: list[str], unavailability: list[dict],
                   faults: list[dict], t0_us: int, t_end_us: int, marks: dict | None = None,
                   brokers: dict[int, str] | None = None, *,
                   fault_colours: Mapping[str, str] | None = None) -> bytes | None:
    """One row per partition: its leader as segments in the broker's colour, ISR size
    as text, unavailability windows as red bars below, and (marks) the acks of lost
    and overwritten records."""
    names = _partition_rows(observations, partitions)
    if not names:
        return None
    fig, ax = plt.subplots(figsize=(WIDTH_IN, 0.45 * len(names) + 1.6))
    end, seen = (t_end_us - t0_us) / 1e6, set()
    for row, name in enumerate(names):
        topic, part = name.rsplit("-", 1)
        mine = sorted((o for o in observations if o.get("partition") == int(part)
                       and o.get("topic") in (None, topic) and o["name"] in ("leader", "isr")),
                      key=lambda o: o["ts_us"])
        segments = _segments(mine, t0_us)
        for i, (x, st) in enumerate(segments):
            x_end = segments[i + 1][0] if i + 1 < len(segments) else end
            ld = st["leader"]
            none = ld is None or ld in (-1, "-1", "none")
            if not none:
                seen.add(int(ld))
            ax.broken_barh([(x, max(x_end - x, 1e-3))], (row - 0.3, 0.5),
                           facecolors="#ffffff" if none else broker_color(ld),
                           edgecolors="#444444", linewidth=0.3)
            if st["isr"] is not None and x_end - x > end / 60:
                ax.text(x + 0.1, row - 0.05, f"isr {len(st['isr'])}", fontsize=6, va="center")
        for w in unavailability:
            if f"{w['topic']}-{w['partition']}" == name:
                ax.broken_barh([((w["start_us"] - t0_us) / 1e6, (w["end_us"] - w["start_us"]) / 1e6)],
                               (row + 0.22, 0.15), facecolors=UNAVAILABLE, edgecolors=UNAVAILABLE,
                               linewidth=0.3)
    _fault_bands(ax, faults, t0_us, fault_colours)
    _anomaly_marks(ax, marks or {}, names, t0_us)
    ax.set_yticks(range(len(names)))
    ax.set_yticklabels(names, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlim(0, max(end, 1))
    ax.set_xlabel("seconds since the first send")
    ax.set_title("Leader per partition (colour = broker), ISR size; red bar = unavailable")
    handles = [plt.Rectangle((0, 0), 1, 1, color=broker_color(b)) for b in sorted(seen)]
    labels = [f"leader {(brokers or {}).get(b, b)}" for b in sorted(seen)]
    handles.append(plt.Rectangle((0, 0), 1, 1, color=UNAVAILABLE))
    labels.append("unavailable")
    extra, extra_labels = ax.get_legend_handles_labels()
    ax.legend(handles + extra, labels + extra_labels, **LEGEND)
    return _png(fig)
