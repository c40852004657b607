"""The report's sentences: what a group of anomaly rows means, and what each fault did.

Everything here reads the run's summary (spark_reports/summary.py, as written to
summary.json) and nothing else, so a stored run's report says the same thing every
time it is rendered. Nodes are named as the cluster names them (`kafka-2`), faults as the scenario names them
(`timeline[1] partition`), times as seconds since the first send.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from families import by_name
from families.records.send_times import unknown_in
from spark_reports.summary import Summary


def count_words(n: int) -> str:
    return f"{n:,}".replace(",", "\u2009")      # thin spaces: 14 840


@dataclass
class RunFacts:
    """What the sentences draw on, read once from a summary."""
    t0_us: int
    faults: dict[str, dict] = field(default_factory=dict)        # fault_id -> fault window
    brokers: dict[int, str] = field(default_factory=dict)        # broker id -> node name
    observations: list[dict] = field(default_factory=list)

    @classmethod
    def of(cls, summary: Summary, t0_us: int) -> "RunFacts":
        m, tl = summary.metrics, summary.timeline
        return cls(t0_us, {f["fault_id"]: f for f in m.get("fault_windows") or []},
                   {int(k): v for k, v in (tl.get("brokers") or {}).items()},
                   sorted(tl.get("observations") or [], key=lambda o: o["ts_us"]))

    def at(self, us: int | None) -> str:
        return "–" if us is None else f"+{(us - self.t0_us) / 1e6:.1f} s"

    def broker(self, b) -> str:
        if b is None:
            return "an unknown broker"
        try:
            return self.brokers.get(int(b), f"broker {b}")
        except (TypeError, ValueError):
            return str(b)

    def fault_name(self, fault_id: str | None) -> str:
        f = self.faults.get(fault_id or "")
        return f.get("label") or f["name"] if f else str(fault_id)

    def election(self, topic: str, partition: int, leader, before_us: int | None) -> dict | None:
        """The observed moment `leader` became the partition's leader, last before
        `before_us`."""
        hit = None
        for o in self.observations:
            if before_us is not None and o["ts_us"] > before_us:
                break
            if o["name"] == "leader" and o.get("partition") == partition \
                    and o.get("topic") in (None, topic) and _same_leader(o.get("leader"), leader):
                hit = o
        return hit

    def rejoined(self, topic: str, partition: int, broker, after_us: int | None) -> dict | None:
        """The first ISR seen after `after_us` that has `broker` in it again."""
        for o in self.observations:
            if after_us is not None and o["ts_us"] <= after_us:
                continue
            if o["name"] == "isr" and o.get("partition") == partition \
                    and o.get("topic") in (None, topic) and broker in (o.get("isr") or []):
                return o
        return None


def _same_leader(a, b) -> bool:
    none = (None, -1)
    return a == b or (a in none and b in none)


def _who(g: dict) -> dict[str, str]:
    """The group and consumer a group of rows is about, in words."""
    return {"group": f"group {g['group']}" if g.get("group") else "a group",
            "consumer": f"consumer {g['consumer']}" if g.get("consumer") else "a consumer"}


def explain(kind: str, g: dict, run: RunFacts) -> str:
    """One group of a kind's rows (anomaly_output.explanations) in words."""
    tp = f"{g['topic']}-{g['partition']}" if g.get("partition") is not None else str(g["topic"])
    text = f"{count_words(g['count'])} {by_name(kind).words.format(tp=tp, **_who(g))}"
    if g.get("first_ack_us") is None:
        return text + _charged(g, run) + "."
    leader, elected = g.get("leader"), g.get("elected_leader")
    # deposed: the controller had elected another, or had left the partition leaderless
    if leader is not None and leader != elected and (
            elected is not None or run.election(g["topic"], g["partition"], None, g["first_ack_us"])):
        text += ". " + _deposed(g, run)
    else:
        who = run.broker(leader if leader is not None else elected)
        how = "" if leader is not None else " (the elected leader; the client did not say)"
        text += (f"; {who}{how} acknowledged them between {run.at(g['first_ack_us'])} and "
                 f"{run.at(g['last_ack_us'])}") + _charged(g, run)
    if g.get("surviving_leader_epochs"):
        epochs = ", ".join(map(str, g["surviving_leader_epochs"]))
        text += f"; the records now at their offsets were written in leader epoch {epochs}"
    return text + "."


def _deposed(g: dict, run: RunFacts) -> str:
    """A deposed leader acknowledged them: when it was cut off, when another was
    elected, when it rejoined (and so truncated them)."""
    topic, part = g["topic"], g["partition"]
    who, elected = run.broker(g["leader"]), run.broker(g["elected_leader"])
    fault = run.faults.get(g.get("fault_id") or "")
    said = f"{who} acknowledged them"
    if fault is not None:
        said += f" after {run.fault_name(fault['fault_id'])} began ({run.at(fault['start_us'])}"
        said += f": {fault['description']})" if fault.get("description") else ")"
        said += " and"
    won = run.election(topic, part, g["elected_leader"], g["first_ack_us"])
    said += (f" after the controller had elected {elected}" if g["elected_leader"] is not None
             else f" after the controller had left {topic}-{part} without a leader")
    said += f" ({run.at(won['ts_us'])})" if won else ""
    said += f", between {run.at(g['first_ack_us'])} and {run.at(g['last_ack_us'])}"
    back = run.rejoined(topic, part, g["leader"], g["last_ack_us"])
    if back is not None:
        said += f"; they were truncated when {who} rejoined ({run.at(back['ts_us'])})"
    return said


def _charged(g: dict, run: RunFacts) -> str:
    # a summary written before rows were charged to one fault: the last active one
    fid = g["fault_id"] if "fault_id" in g else (g.get("faults") or [None])[-1]
    if not fid or fid == "none":
        return ", while no fault was active"
    if fid in (g.get("faults") or []):
        return f", while {run.fault_name(fid)} was active"
    return f", after {run.fault_name(fid)} was healed (charged to it: within 10 s of its heal)"


# -- what each fault did ---------------------------------------------------------------

def fault_story(rec: dict, isr: dict | None, summary: Summary, run: RunFacts) -> list[tuple[str, str]]:
    """(time, sentence) lines: injected; what the cluster did (elections, ISR shrink and
    growth, controller change, each belonging to this fault by the spec's rule);
    healed; recovered; what it cost. A fault that could not be injected: what failed."""
    fid = rec["fault_id"]
    if rec.get("inject_error"):     # what failed, not what it would have done
        return [(run.at(rec["start_us"]), f"could not be injected: {rec['inject_error']}"),
                ("", "it did not happen as planned: no window, change or anomaly is charged "
                     "to it, and the run fails (fault_errors)")]
    timed = [(rec["start_us"], f"injected: {rec.get('description') or rec['name']}")]
    timed += _cluster_moves(fid, run)
    if rec.get("healed"):
        timed.append((rec["end_us"], "healed"))
    lines = [(run.at(ts) if ts is not None else "", text) for ts, text in
             sorted(timed, key=lambda x: (x[0] is None, x[0] or 0))]
    if rec.get("heal_error"):
        lines.append(("", f"its heal failed: {rec['heal_error']}"
                          + ("; heal-all healed it later" if rec.get("healed") else "")))
    if not rec.get("healed"):
        lines.append(("–", "never healed"))
    lines.append(("", _recovered(rec, isr, unknown_in(summary.metrics))))
    cost = summary.anomalies_by_fault.get(fid) or {}
    said = [f"{by_name(k).name} {count_words(n)}" for k, n in cost.items() if n]
    if said:
        lines.append(("", "charged to it: " + ", ".join(said)))
    return lines


def _cluster_moves(fid: str, run: RunFacts, most: int = 10) -> list[tuple[int | None, str]]:
    """The fault's leader, ISR and controller changes in words; those of one kind within
    a second of each other in one line ("kafka-1 elected leader of t-0, t-2", "ISR shrank
    on t-0, t-1"). Every observation is read, so an ISR change is called a shrink or a
    growth against the one before it."""
    sizes: dict[str, int] = {}
    lines: list[tuple[int, str, list[str]]] = []
    for o in run.observations:
        tp = f"{o.get('topic')}-{o.get('partition')}"
        what = _move(o, tp, sizes, run)
        if what is None or o.get("fault_id") != fid:
            continue
        if o["name"] == "controller":
            tp = ""
        if lines and lines[-1][1] == what and o["ts_us"] - lines[-1][0] < 1_000_000:
            if tp and tp not in lines[-1][2]:
                lines[-1][2].append(tp)
            continue
        lines.append((o["ts_us"], what, [tp] if tp else []))
    out: list[tuple[int | None, str]] = [(ts, f"{what} {', '.join(tps)}".strip())
                                         for ts, what, tps in lines[:most]]
    if len(lines) > most:
        out.append((None, f"… and {len(lines) - most} more leader/ISR changes"))
    return out


def _move(o: dict, tp: str, sizes: dict[str, int], run: RunFacts) -> str | None:
    if o["name"] == "leader":
        return (f"{run.broker(o['leader'])} elected leader of" if o.get("leader") not in (None, -1)
                else "no leader for")
    if o["name"] == "isr":
        size, before = len(o.get("isr") or []), sizes.get(tp)
        sizes[tp] = size
        return ("ISR shrank on" if before is not None and size < before else
                "ISR grew on" if before is not None and size > before else "ISR changed on")
    if o["name"] == "controller":
        return f"{o.get('target') or 'no node'} is the active controller"
    return None


def _recovered(rec: dict, isr: dict | None, unknown: str | None = None) -> str:
    """`unknown`: why the run's send times are unknown (and so is its recovery)."""
    failover = rec.get("controller_failover_s")
    head = (f"controller failover {failover:.1f} s; " if failover is not None else "")
    if unknown:
        return _with_isr(head + f"recovery unknown: {unknown}", isr)
    if rec.get("seconds") is None:
        return f"never recovered: {', '.join(rec.get('never_recovered') or [])} still unavailable"
    if rec.get("no_partition_unavailable"):
        text = head + "no partition unavailable"
    else:
        worst = max((p for p in rec["partitions"].items() if p[1]), key=lambda p: p[1]["seconds"],
                    default=(None, None))[0]
        text = (head + f"recovered {rec['seconds']:.1f} s after the injection "
                f"({rec.get('after_heal_s') or 0:.1f} s after the heal); unavailable "
                f"{rec['unavailable_s']:.1f} s at most on one partition ({worst})")
    return _with_isr(text, isr)


def _with_isr(text: str, isr: dict | None) -> str:
    if isr and isr.get("shrunk_s") is not None:
        back = isr.get("restored_after_heal_s")
        text += ("; ISR full again " + (f"{back:.1f} s after the heal" if back is not None
                                         else "never"))
    return text
