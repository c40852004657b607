"""The report's plots, as PNG bytes (matplotlib, no display needed).

Faults are drawn as shaded bands over time, the way Jepsen draws nemesis
activity. Times are seconds since the run's first send.
"""
from __future__ import annotations

import io

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

BAND_COLORS = ("#f4a582", "#92c5de", "#b2abd2", "#fdb863", "#a6dba0", "#c2a5cf")


def _png(fig) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight")
    plt.close(fig)
    return buf.getvalue()


def _fault_bands(ax, faults: list[dict], t0_us: int, label: bool = True) -> None:
    names: dict[str, str] = {}
    for f in faults:
        color = names.setdefault(f["name"], BAND_COLORS[len(names) % len(BAND_COLORS)])
        ax.axvspan((f["start_us"] - t0_us) / 1e6, (f["end_us"] - t0_us) / 1e6,
                   color=color, alpha=0.35, lw=0,
                   label=f["name"] if label and f["name"] not in ax.get_legend_handles_labels()[1]
                   else None)


def throughput_png(per_second: list[dict], faults: list[dict], t0_us: int) -> bytes:
    fig, ax = plt.subplots(figsize=(11, 3.2))
    xs = [s["second"] - t0_us / 1e6 for s in per_second]
    for key, color in (("sent", "#999999"), ("acked", "#1b7837"), ("consumed", "#2166ac")):
        ax.plot(xs, [s[key] for s in per_second], lw=1, color=color, label=key)
    _fault_bands(ax, faults, t0_us)
    ax.set_xlabel("seconds since first send")
    ax.set_ylabel("records / s")
    ax.set_title("Throughput")
    ax.legend(loc="upper right", fontsize=8, ncol=4)
    ax.grid(alpha=0.3)
    return _png(fig)


def latency_png(per_second: list[dict], faults: list[dict], t0_us: int) -> bytes:
    fig, ax = plt.subplots(figsize=(11, 3.2))
    rows = [s for s in per_second if s.get("ack_p50_ms") is not None]
    xs = [s["second"] - t0_us / 1e6 for s in rows]
    for key, color, label in (("ack_p50_ms", "#1b7837", "p50"), ("ack_p99_ms", "#e08214", "p99"),
                              ("ack_max_ms", "#b2182b", "max")):
        ax.plot(xs, [max(s[key], 0.001) for s in rows], lw=1, color=color, label=label)
    _fault_bands(ax, faults, t0_us)
    if rows:
        ax.set_yscale("log")
    ax.set_xlabel("seconds since first send (by ack time)")
    ax.set_ylabel("ack latency (ms)")
    ax.set_title("Ack latency per second")
    ax.legend(loc="upper right", fontsize=8, ncol=4)
    ax.grid(alpha=0.3, which="both")
    return _png(fig)


def lag_png(lag: list[dict], faults: list[dict], t0_us: int) -> bytes | None:
    """Consumer lag per second, one line per group: a consumer that stops while
    records wait climbs."""
    if not lag:
        return None
    fig, ax = plt.subplots(figsize=(11, 3.2))
    for g in lag:
        ax.plot([p["second"] - t0_us / 1e6 for p in g["per_second"]],
                [p["lag"] for p in g["per_second"]], lw=1, label=g["group_id"])
    _fault_bands(ax, faults, t0_us)
    ax.set_xlabel("seconds since first send")
    ax.set_ylabel("records acked, not yet delivered")
    ax.set_title("Consumer lag per group")
    ax.legend(loc="upper right", fontsize=8, ncol=4)
    ax.grid(alpha=0.3)
    return _png(fig)


MARKS = {"lost": ("#000000", "x"), "overwritten": ("#762a83", "D")}


def _anomaly_marks(ax, marks: dict, names: list[str], t0_us: int) -> None:
    """Lost and overwritten records on their partition's row, from first to last ack."""
    for kind, groups in marks.items():
        color, marker = MARKS[kind]
        for g in groups:
            name = f"{g['topic']}-{g['partition']}"
            if name not in names or g.get("first_ack_us") is None:
                continue
            row = names.index(name)
            xs = [(g["first_ack_us"] - t0_us) / 1e6, (g["last_ack_us"] - t0_us) / 1e6]
            ax.plot(xs, [row - 0.05] * 2, color=color, lw=2, marker=marker, ms=5,
                    label=kind if kind not in ax.get_legend_handles_labels()[1] else None)


def leadership_png(observations: list[dict], partitions: list[str], unavailability: list[dict],
                   faults: list[dict], t0_us: int, t_end_us: int,
                   marks: dict | None = None) -> bytes | None:
    """One row per partition: leader as coloured segments, ISR size as text,
    unavailability windows as red hatched bars below, and (marks) the acks of lost
    and overwritten records."""
    obs = [o for o in observations if o.get("partition") is not None]
    names = sorted({f"{o['topic']}-{o['partition']}" if o.get("topic") else f"?-{o['partition']}"
                    for o in obs} | set(partitions),
                   key=lambda n: (n.rsplit("-", 1)[0], int(n.rsplit("-", 1)[1])))
    if not names:
        return None
    fig, ax = plt.subplots(figsize=(11, 0.45 * len(names) + 1.4))
    leaders: dict[str, int] = {}
    palette = plt.get_cmap("tab10")
    end = (t_end_us - t0_us) / 1e6
    for row, name in enumerate(names):
        topic, part = name.rsplit("-", 1)
        mine = sorted((o for o in obs if o["partition"] == int(part)
                       and (o.get("topic") in (None, topic))), key=lambda o: o["ts_us"])
        state = {"leader": None, "isr": None}
        segments = []
        for o in mine:
            if o.get("leader") is not None or o["name"] == "leader":
                state["leader"] = o.get("leader")
            if o.get("isr") is not None:
                state["isr"] = o["isr"]
            # state before the first send is drawn from 0 (the plot starts there)
            segments.append((max(0.0, (o["ts_us"] - t0_us) / 1e6), dict(state)))
        for i, (x, st) in enumerate(segments):
            x_end = segments[i + 1][0] if i + 1 < len(segments) else end
            ld = st["leader"]
            if ld is None or ld in (-1, "-1", "none"):
                color = "#ffffff"
            else:
                color = palette(leaders.setdefault(str(ld), len(leaders)) % 10)
            ax.broken_barh([(x, max(x_end - x, 1e-3))], (row - 0.3, 0.5), facecolors=color,
                           edgecolors="#444444", linewidth=0.3)
            if st["isr"] is not None and x_end - x > end / 60:
                ax.text(x + 0.1, row - 0.05, f"isr {len(st['isr'])}", fontsize=6, va="center")
        for w in unavailability:
            if f"{w['topic']}-{w['partition']}" == name:
                ax.broken_barh([((w["start_us"] - t0_us) / 1e6, (w["end_us"] - w["start_us"]) / 1e6)],
                               (row + 0.22, 0.15), facecolors="#d6604d", hatch="////",
                               edgecolors="#b2182b", linewidth=0.3)
    _fault_bands(ax, faults, t0_us, label=False)
    _anomaly_marks(ax, marks or {}, names, t0_us)
    ax.set_yticks(range(len(names)))
    ax.set_yticklabels(names, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlim(0, max(end, 1))
    ax.set_xlabel("seconds since first send")
    ax.set_title("Leader per partition (colour = broker), ISR size; red = unavailable")
    handles = [plt.Rectangle((0, 0), 1, 1, color=palette(i % 10)) for i in leaders.values()]
    extra, extra_labels = ax.get_legend_handles_labels()
    if handles or extra:
        ax.legend(handles + extra, [f"leader {k}" for k in leaders] + extra_labels, fontsize=7,
                  loc="upper right", ncol=min(6, len(handles) + len(extra)))
    return _png(fig)
