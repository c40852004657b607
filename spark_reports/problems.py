"""What went wrong in a run beside the anomalies, from what the run stored.

A verdict says whether Kafka kept its promises; a reader also needs to know when
the run itself did not go as planned, because that changes what the verdict
proves: a workload that died (its load stopped early), a broker still down when
its heal finished, a fault that could not be injected or came late, a consumer
group that received nothing for a long while, offset commits that failed, a drain
that did not finish, metadata the observer could not read.

Each problem is {kind, at_us, text} (at_us: when it happened, null if unknown),
read from the events (core/timeline.py: Timeline), the records family's consumer
lag and the offset commits' counts, and RUN_DIR/faults.json and phases.json. Two also count in the verdict, each a
default expectation: `workload-died` (`workload_deaths`) and `fault-error`
(`fault_errors`: faults that could not be injected, or healed, as planned).
"""
from __future__ import annotations

import json

from core.history import CLIENT_FATAL, WORKLOAD_DIED
from core.timeline import Timeline
from spark_reports.storage import RunLocation

# A group that had records waiting and received none for this long is worth saying.
CONSUMER_STALL_S = 15
# A fault injected this much later than planned (a blocking fault before it, a slow
# Docker call) makes the timeline differ from the scenario's.
PLAN_SLIP_S = 2.0


def workload_deaths(tl: Timeline) -> list[dict]:
    """Every workload that died on its own, once each (a dying worker and its parent,
    which saw the exit code, may both say so): the earliest report, with the worker's
    own reason where it gave one."""
    seen: dict[tuple, dict] = {}
    for e in sorted(tl.clients, key=lambda e: e.ts_us):
        if e.name != WORKLOAD_DIED:
            continue
        key = (e.target, e.detail.get("incarnation"))
        d = seen.setdefault(key, {"workload": e.target, "kind": e.detail.get("workload"),
                                  "incarnation": e.detail.get("incarnation"), "at_us": e.ts_us,
                                  "error": None, "fatal": None, "exitcode": None})
        for k in ("error", "fatal", "exitcode"):
            if d[k] is None and e.detail.get(k) is not None:
                d[k] = e.detail[k]
    return list(seen.values())


def client_fatals(tl: Timeline) -> list[dict]:
    """Every fatal client error (`client-fatal`): who, when, the error and the client's
    words, the call and the transaction it hit, and the policy that followed."""
    return [{"workload": e.target, "at_us": e.ts_us, **{k: e.detail.get(k) for k in (
        "error", "reason", "call", "txn_seq", "policy")}}
        for e in sorted(tl.clients, key=lambda e: e.ts_us) if e.name == CLIENT_FATAL]


def fault_errors(tl: Timeline, loc: RunLocation) -> list[dict]:
    """Every fault that could not be injected or healed as planned, once each: its
    inject failed (the fault row's `inject_error`), a heal failed (a heal row's
    `heal_error`; in runs from before those rows, faults.json's `heal:` error), or it
    was never healed. A heal that came late but did not fail is none of these."""
    planned = {p.get("fault_id"): str(p["error"]) for p in _planned(loc)
               if p.get("fault_id") and "heal:" in str(p.get("error") or "")}
    out = []
    for f in tl.faults:
        heal = f.heal_error or _heal_part(planned.get(f.fault_id))
        if f.healed and not (f.inject_error or heal):
            continue
        out.append({"fault_id": f.fault_id, "label": f.label, "name": f.name,
                    "target": f.target, "at_us": f.start_us, "inject_error": f.inject_error,
                    "heal_error": heal, "healed": f.healed})
    # a fault that failed before it could write its row (faults.json only)
    for p in _planned(loc):
        if p.get("fault_id") is None and p.get("injected_s") is not None and p.get("error"):
            out.append({"fault_id": None, "label": p.get("label"), "name": None,
                        "target": None, "at_us": None, "inject_error": str(p["error"]),
                        "heal_error": None, "healed": False})
    return out


def _heal_part(error: str | None) -> str | None:
    """The heal's part of a faults.json error ("inject: …; heal: …")."""
    return None if error is None else error[error.index("heal:") + 5:].strip()


def summarize_fault_errors(summary: dict, tl: Timeline, loc: RunLocation) -> None:
    """counts.fault_errors (a default expectation: a fault that did not happen as
    planned makes the run prove something else) and the faults themselves."""
    errors = fault_errors(tl, loc)
    summary["counts"]["fault_errors"] = len(errors)
    summary["fault_errors"] = errors
    if errors:
        summary.setdefault("count_notes", {})["fault_errors"] = "; ".join(
            fault_error_words(e) for e in errors)[:600]


def fault_error_words(e: dict) -> str:
    """What went wrong with one fault, in words."""
    if e["inject_error"]:
        return f"{e['label']} could not be injected: {e['inject_error']}"
    if e["heal_error"]:
        later = "healed later by heal-all" if e["healed"] else "never healed"
        return f"{e['label']} could not be healed as planned ({later}): {e['heal_error']}"
    return f"{e['label']} was never healed"


def find_problems(tl: Timeline, loc: RunLocation, consumer_lag: list[dict] | None = None,
                  counts: dict | None = None) -> list[dict]:
    """Every problem, in time order (those of unknown time last). `consumer_lag`: the
    records family's (summary.metrics["consumer_lag"]); `counts`: the run's counts."""
    out = [_death(d) for d in workload_deaths(tl)]
    out += [_fatal(f) for f in client_fatals(tl)]
    errors = fault_errors(tl, loc)
    out += [{"kind": "fault-error", "at_us": e["at_us"], "text": fault_error_words(e)}
            for e in errors]
    out += _fault_problems(tl)
    out += _plan_problems(loc, {e["fault_id"] for e in errors})
    out += _phase_problems(loc)
    out += _consumer_problems(consumer_lag or [], counts or {})
    out += _metadata_gaps(tl)
    return sorted(out, key=lambda p: (p["at_us"] is None, p["at_us"] or 0))


def _death(d: dict) -> dict:
    why = d["error"] or (f"exit code {d['exitcode']}" if d["exitcode"] is not None else "no reason given")
    fatal = " (a fatal client error)" if d["fatal"] else ""
    who = d["workload"] if d["incarnation"] is None else f"{d['workload']} (incarnation {d['incarnation']})"
    return {"kind": "workload-died", "at_us": d["at_us"],
            "text": f"{d['kind'] or 'workload'} {who} died{fatal}: {why}; its load stopped there"}


def _fatal(f: dict) -> dict:
    where = f" in {f['call']}" if f["call"] else ""
    txn = f" (transaction {f['txn_seq']})" if f["txn_seq"] is not None else ""
    then = {"restart": "a new incarnation with the same transactional.id took over",
            "stop": "it stopped"}.get(f["policy"], "no policy said what next")
    return {"kind": "client-fatal", "at_us": f["at_us"],
            "text": f"producer {f['workload']} hit a fatal client error{where}{txn}: "
                    f"{f['error']}: {(f['reason'] or '')[:300]}; policy {f['policy']}: {then}"}


def _fault_problems(tl: Timeline) -> list[dict]:
    """Nodes still down when a heal finished (fault_errors says the rest)."""
    out = []
    for f in tl.faults:
        down = [n for n, up in (f.heal_detail.get("broker_running_at_heal") or {}).items() if not up]
        down += list(f.heal_detail.get("not_ready") or [])
        if down:
            out.append({"kind": "node-down-after-heal", "at_us": f.end_us,
                        "text": f"{', '.join(sorted(set(down)))} not running when the heal of "
                                f"{f.label} finished"})
    return out


def _read_json(loc: RunLocation, name: str):
    text = loc.read_text(name)
    try:
        return json.loads(text) if text else None
    except ValueError:
        return None


def _planned(loc: RunLocation) -> list[dict]:
    return [p for p in _read_json(loc, "faults.json") or [] if isinstance(p, dict)]


def _plan_problems(loc: RunLocation, said: set) -> list[dict]:
    """Planned faults that came late or not at all (faults.json: seconds after the
    faults phase began, so no absolute time); `said`: the fault_ids fault_errors named."""
    out = []
    for p in _planned(loc):
        if p.get("injected_s") is None:
            out.append({"kind": "plan", "at_us": None,
                        "text": f"{p.get('label')} planned at {p.get('planned_at_s')} s never ran"})
        elif p.get("error") and p.get("fault_id") is not None and p["fault_id"] not in said:
            out.append({"kind": "fault-error", "at_us": None,
                        "text": f"{p.get('label')} did not go as planned: {str(p['error'])[:300]}"})
        elif (p.get("slip_s") or 0) > PLAN_SLIP_S:
            out.append({"kind": "plan", "at_us": None,
                        "text": f"{p.get('label')} was injected {p['slip_s']:.1f} s later than "
                                f"planned ({p.get('planned_at_s')} s)"})
    return out


def _phase_problems(loc: RunLocation) -> list[dict]:
    out = []
    for ph in _read_json(loc, "phases.json") or []:
        refused = {b: why for b, why in ((ph.get("detail") or {}).get("log_levels") or {}).items()
                   if why != "ok"} if isinstance(ph, dict) else {}
        if refused:      # the evidence asked for (cluster.log_levels) is not in the broker logs
            out.append({"kind": "log-levels", "at_us": ph.get("end_us"),
                        "text": f"cluster.log_levels not set on {', '.join(sorted(refused))}: "
                                f"{_last_line(next(iter(refused.values())))}"})
        left = (ph.get("detail") or {}).get("left_on_cluster") if isinstance(ph, dict) else None
        if left:         # an external cluster keeps what the run could not delete
            out.append({"kind": "left-on-cluster", "at_us": ph.get("end_us"),
                        "text": "the run could not remove from the external cluster: "
                                + ", ".join(f"{what} ({why})" for what, why in sorted(left.items()))})
        if isinstance(ph, dict) and ph.get("outcome") == "failed":
            d = ph.get("detail") or {}
            why = ph.get("error") or d.get("error") or d.get("incomplete") or d.get("leftovers")
            out.append({"kind": "phase", "at_us": ph.get("end_us"),
                        "text": f"phase {ph.get('name')} did not finish cleanly"
                                + (f": {str(why)[:300]}" if why else "")})
    return out


def _last_line(words) -> str:
    """A tool's last line: its verdict (the lines before are the JVM's warnings)."""
    lines = [line for line in str(words).splitlines() if line.strip()]
    return lines[-1].strip()[-200:] if lines else ""


def _consumer_problems(consumer_lag: list[dict], c: dict) -> list[dict]:
    out = []
    for g in consumer_lag:
        if (g.get("longest_stall_s") or 0) >= CONSUMER_STALL_S:
            out.append({"kind": "consumer-stall", "at_us": None,
                        "text": f"group {g['group_id']} received nothing new for "
                                f"{g['longest_stall_s']} s while records waited"})
    failed = (c.get("commits") or 0) - (c.get("commits_ok") or 0)
    if failed > 0:
        out.append({"kind": "commits", "at_us": None,
                    "text": f"{failed:,} of {c['commits']:,} offset commits failed"})
    return out


def _metadata_gaps(tl: Timeline) -> list[dict]:
    out, since = [], None
    for o in sorted(tl.observations, key=lambda o: o.ts_us):
        if o.name == "metadata-unavailable":
            since = o.ts_us
        elif o.name == "metadata-available" and since is not None:
            if o.ts_us - since > 5_000_000:
                out.append({"kind": "observer", "at_us": since,
                            "text": f"the observer could not read metadata for "
                                    f"{(o.ts_us - since) / 1e6:.1f} s (leaders and ISR unknown then)"})
            since = None
        elif o.name == "metadata-limited":
            out.append({"kind": "observer", "at_us": o.ts_us,
                        "text": f"the observer could not see the {o.target or 'cluster'}: "
                                f"{o.detail.get('reason') or 'not allowed'}"})
    return out
