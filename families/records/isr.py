"""ISR shrink and regrowth per fault, from the observer's `isr` events (claim 9).

Events are few, so this is plain Python over the parsed timeline. For each fault
and each partition it touched:

- `shrunk_s`: seconds from the injection to the first observed ISR smaller than
  the partition's replicas (0 when it was already short at the injection; null
  when it never shrank before the heal);
- `restored_after_heal_s`: seconds from the heal to the first observed full ISR
  (0 when it was full at the heal; null when it never was again, or the fault was
  never healed and the ISR stayed short);
- `smallest`: the fewest in-sync replicas seen between injection and heal.

The fault's own numbers: the earliest shrink and the latest restoration over its
partitions (null when one partition never got its ISR back).
"""
from __future__ import annotations

from core.timeline import FaultWindow, Observation, Timeline


def isr_by_fault(tl: Timeline, touched: dict) -> list[dict]:
    """touched: fault index -> (partitions, how they were chosen), as for recovery."""
    history = _isr_history(tl.observations)
    out = []
    for i, f in enumerate(tl.faults):
        per = {f"{t}-{p}": _partition_isr(f, *history[(t, p)])
               for t, p in touched[i][0] if (t, p) in history}
        shrunk = [r["shrunk_s"] for r in per.values() if r["shrunk_s"] is not None]
        restored = [r["restored_after_heal_s"] for r in per.values() if r["shrunk_s"] is not None]
        out.append({"fault_id": f.fault_id, "name": f.name,
                    "shrunk_s": min(shrunk, default=None),
                    "restored_after_heal_s": (None if None in restored
                                              else max(restored, default=None)),
                    "partitions": per})
    return out


def _isr_history(observations: list[Observation]) -> dict:
    """(topic, partition) -> ([(ts_us, isr size)], replica count)."""
    sizes: dict[tuple, list] = {}
    replicas: dict[tuple, int] = {}
    for o in observations:
        if o.name != "isr" or o.isr is None or o.topic is None or o.partition is None:
            continue
        key = (o.topic, o.partition)
        sizes.setdefault(key, []).append((o.ts_us, len(o.isr)))
        listed = o.detail.get("replicas")
        replicas[key] = len(listed) if isinstance(listed, list) else max(
            replicas.get(key, 0), len(o.isr))
    return {k: (v, replicas[k]) for k, v in sizes.items()}


def _size_at(sizes: list[tuple[int, int]], ts_us: int) -> int | None:
    before = [n for t, n in sizes if t <= ts_us]
    return before[-1] if before else None


def _partition_isr(f: FaultWindow, sizes: list[tuple[int, int]], replicas: int) -> dict:
    at_start = _size_at(sizes, f.start_us)
    during = [(t, n) for t, n in sizes if f.start_us < t <= f.end_us]
    if at_start is not None and at_start < replicas:
        shrunk_s = 0.0
    else:
        shrunk_s = next((round((t - f.start_us) / 1e6, 6) for t, n in during if n < replicas), None)
    smallest = min([n for _, n in during] + ([at_start] if at_start is not None else []),
                   default=None)
    restored = None
    if shrunk_s is not None:
        at_heal = _size_at(sizes, f.end_us)
        if f.healed and at_heal == replicas:
            restored = 0.0
        else:
            restored = next((round((t - f.end_us) / 1e6, 6) for t, n in sizes
                             if t > f.end_us and n == replicas), None)
    return {"shrunk_s": shrunk_s, "restored_after_heal_s": restored, "smallest": smallest,
            "replicas": replicas}
