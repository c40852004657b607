"""Synthetic run histories with injected anomalies of every kind.

`generate(run_dir, SyntheticSpec(...))` writes a history in the contract's
format (the same schemas as harness.history, part files of `chunk_rows` rows)
and returns the exact anomaly counts the spec's rules give for it, so tests
and benchmarks can compare a reconciler against ground truth. Everything is
numpy/pyarrow-vectorised: 10 M records take well under a minute.

The run: `producers` idempotent producers p0… send round-robin at `rate_per_s`
to `partitions` partitions of one topic; producer i's seq s goes to partition
(s + i) mod K, so its consecutive records on a partition are K seqs apart. A
transactional producer tx0 interleaves batches, some aborted. Group g0
(read_committed, one consumer per partition slot) consumes every committed
record in `run` and commits as it goes; the drain (read_committed) reads every
committed record after the run. `faults` faults each stall one partition for
`fault_seconds` (its sends are acked only at the heal), which shows up as an
unavailability window.

Each injected anomaly uses its own records (disjoint), and injected records
that need a producer of their own get one (pw, pfail, pdiv, prec) so that no
injection creates a reorder by accident. Injections and their effects:

  lost          an acked record is consumed by nobody               lost +1
  overwritten   an acked record's offset holds a pw record instead  overwritten +1, lost +1
  duplicate     an acked record is also consumed at a later offset  duplicate +1
  reordered     two consecutive records of one producer and
                partition swap offsets                              reordered +1
  unexpected    a consumed "ghost-k" that was never sent            unexpected +1
  unexpected_failed  a `failed` non-transactional pfail record
                is consumed                                         unexpected +1
  divergent     consumer c-div (group g-div) sees an indeterminate
                pdiv record at an acked record's offset             divergent +1, overwritten +1,
                                                                    recovered +1
  aborted_read  g0 (read_committed) receives a record of an
                aborted transaction                                 aborted_read +1
  skipped       g0 never receives an acked record, commits past it  skipped +1
  redelivered   g0 receives a position a second time                redelivered +1
  recovered     an indeterminate prec record is consumed            recovered +1
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import yaml

from harness.history import SCHEMAS

INJECTABLE = ("lost", "overwritten", "duplicate", "reordered", "unexpected",
              "unexpected_failed", "divergent", "aborted_read", "skipped", "redelivered",
              "recovered")

ACKED, FAILED, INDET = 0, 1, 2
STATUS = np.array(["acked", "failed", "indeterminate"], dtype=object)
RUN, DRAIN = 0, 1


@dataclass(frozen=True)
class SyntheticSpec:
    records: int = 10_000              # records of the idempotent producers p0…
    producers: int = 4
    partitions: int = 6
    topic: str = "t"
    rate_per_s: float = 5_000.0
    failed_fraction: float = 0.001     # plain failures, never consumed
    indeterminate_fraction: float = 0.001
    txn_records: int | None = None     # default records // 50
    txn_batch: int = 10
    aborted_txn_fraction: float = 0.1
    faults: int = 2
    fault_seconds: float = 3.0
    inject: dict = field(default_factory=dict)   # kind -> how many (see INJECTABLE)
    seed: int = 7
    chunk_rows: int = 1_000_000
    run_id: str = "synthetic"
    write_scenario: bool = True

    def n(self, kind: str) -> int:
        if kind not in INJECTABLE:
            raise ValueError(f"unknown injection {kind!r}; use {INJECTABLE}")
        return int(self.inject.get(kind, 0))


def expected_anomalies(spec: SyntheticSpec) -> dict[str, int]:
    n = spec.n
    return {
        "lost": n("lost") + n("overwritten"),
        "overwritten": n("overwritten") + n("divergent"),
        "duplicate": n("duplicate"),
        "reordered": n("reordered"),
        "unexpected": n("unexpected") + n("unexpected_failed"),
        "divergent": n("divergent"),
        "aborted_read": n("aborted_read"),
        "skipped": n("skipped"),
        "redelivered": n("redelivered"),
        "recovered": n("recovered") + n("divergent"),
        # the consumed rows carry no poll_seq or assignment: nothing is judged
        "poll_skip": 0,
        "nonmonotonic_poll": 0,
    }


class _Cols:
    """Column arrays accumulated in pieces, concatenated once."""

    def __init__(self, names):
        self.parts = {k: [] for k in names}

    def add(self, **cols):
        n = len(next(iter(cols.values())))
        for k in self.parts:
            v = cols.get(k)
            self.parts[k].append(np.full(n, -1, dtype=np.int64) if v is None
                                 else np.asarray(v, dtype=np.int64))

    def done(self) -> dict[str, np.ndarray]:
        return {k: (np.concatenate(v) if v else np.zeros(0, np.int64)) for k, v in self.parts.items()}


def generate(run_dir: str | os.PathLike, spec: SyntheticSpec = SyntheticSpec()) -> dict:
    """Write the history; return {"anomalies": expected counts, "counts": {...}}."""
    rng = np.random.default_rng(spec.seed)
    run_dir = Path(run_dir)
    N, P, K = spec.records, spec.producers, spec.partitions
    interval = 1_000_000 / spec.rate_per_s
    t0 = 1_700_000_000_000_000

    # Producer name table: p0..p{P-1}, tx0, pw, pfail, pdiv, prec, ghost.
    names = [f"p{i}" for i in range(P)] + ["tx0", "pw", "pfail", "pdiv", "prec", "ghost"]
    TX, PW, PFAIL, PDIV, PREC, GHOST = range(P, P + 6)

    # --- normal producers
    g = np.arange(N, dtype=np.int64)
    n_prod = g % P
    n_seq = g // P
    n_part = (n_seq + n_prod) % K
    n_send = t0 + (g * interval).astype(np.int64)
    u = rng.random(N)
    n_status = np.where(u < spec.failed_fraction, FAILED,
                        np.where(u < spec.failed_fraction + spec.indeterminate_fraction, INDET, ACKED))
    n_lat = (rng.lognormal(np.log(3000), 0.5, N)).astype(np.int64) + 200

    # --- transactional producer
    M = spec.txn_records if spec.txn_records is not None else N // 50
    j = np.arange(M, dtype=np.int64)
    t_send = t0 + ((j + 0.5) * (N / max(M, 1)) * interval).astype(np.int64)
    t_part = j % K
    t_txn = j // spec.txn_batch
    n_txn = int(t_txn.max()) + 1 if M else 0
    n_aborted = min(n_txn, max(int(round(n_txn * spec.aborted_txn_fraction)),
                                -(-spec.n("aborted_read") // spec.txn_batch)))
    aborted_txn = np.zeros(n_txn, bool)
    aborted_txn[rng.choice(n_txn, n_aborted, replace=False)] = True
    t_aborted = aborted_txn[t_txn] if M else np.zeros(0, bool)
    t_lat = (rng.lognormal(np.log(5000), 0.4, M)).astype(np.int64) + 500

    # --- faults: each stalls one partition; its sends are acked only after the heal.
    duration_us = int(N * interval)
    faults = []
    for k in range(spec.faults):
        start = t0 + int(duration_us * (k + 1) / (spec.faults + 1))
        end = start + int(spec.fault_seconds * 1e6)
        faults.append((f"kill-leader-{k}", int(k % K), start, end))
    n_ack = n_send + n_lat
    t_ack = t_send + t_lat
    for _, part, start, end in faults:
        for send, ack, partv in ((n_send, n_ack, n_part), (t_send, t_ack, t_part)):
            hit = (partv == part) & (send >= start) & (send < end)
            ack[hit] = end + rng.integers(1000, 20000, hit.sum())

    # --- offsets: committed and aborted records share the log, ordered by send time.
    log_is_tx = np.concatenate([np.zeros(int((n_status == ACKED).sum()), bool), np.ones(M, bool)])
    n_logged = np.flatnonzero(n_status == ACKED)
    log_part = np.concatenate([n_part[n_logged], t_part])
    log_send = np.concatenate([n_send[n_logged], t_send])
    order = np.lexsort((log_send, log_part))
    sorted_part = log_part[order]
    first_of = np.searchsorted(sorted_part, np.arange(K))
    log_off = np.empty(len(order), np.int64)
    log_off[order] = np.arange(len(order)) - first_of[sorted_part]
    n_off = np.full(N, -1, np.int64)
    n_off[n_logged] = log_off[~log_is_tx]
    t_off = log_off[log_is_tx]
    end_off = np.bincount(log_part, minlength=K).astype(np.int64)   # next free offset

    # --- injections on disjoint acked records of p0…
    used = np.zeros(N, bool)
    used[n_status != ACKED] = True

    def pick(count: int, ok=None) -> np.ndarray:
        if count == 0:
            return np.zeros(0, np.int64)
        free = ~used if ok is None else (~used & ok)
        cand = np.flatnonzero(free)
        if len(cand) < count:
            raise ValueError(f"history too small to inject {count} anomalies")
        got = np.sort(rng.choice(cand, count, replace=False))
        used[got] = True
        return got

    # reordered: pairs (a, b = a + K*P): consecutive seqs of a producer on a partition.
    n_re = spec.n("reordered")
    pair_ok = np.zeros(N, bool)
    pair_ok[: max(N - K * P, 0)] = True
    b_free = np.zeros(N, bool)
    b_free[: max(N - K * P, 0)] = ~used[K * P:]
    re_a = []
    if n_re:
        cand = np.flatnonzero(~used & pair_ok & b_free)
        rng.shuffle(cand)
        for a in cand:
            b = a + K * P
            if not used[a] and not used[b]:
                used[a] = used[b] = True
                re_a.append(a)
                if len(re_a) == n_re:
                    break
        if len(re_a) < n_re:
            raise ValueError("history too small to inject the reorders")
    re_a = np.array(sorted(re_a), np.int64)
    re_b = re_a + K * P
    n_off[re_a], n_off[re_b] = n_off[re_b].copy(), n_off[re_a].copy()

    lost = pick(spec.n("lost"))
    over = pick(spec.n("overwritten"))
    dup = pick(spec.n("duplicate"))
    div = pick(spec.n("divergent"))
    skip = pick(spec.n("skipped"))
    redel = pick(spec.n("redelivered"))

    def alloc_end(parts: np.ndarray) -> np.ndarray:
        """Fresh offsets at the end of each record's partition, in the given order."""
        out = np.empty(len(parts), np.int64)
        for i, p in enumerate(parts):
            out[i] = end_off[p]
            end_off[p] += 1
        return out

    # --- produced rows
    PR = _Cols(["prod", "seq", "part", "off", "status", "send", "ack", "txn_seq", "txn_out"])
    n_ack_col = np.where(n_status == INDET, -1, np.where(n_status == FAILED, n_send + 5000, n_ack))
    PR.add(prod=n_prod, seq=n_seq, part=np.where(n_status == INDET, -1, n_part), off=n_off,
           status=n_status, send=n_send, ack=n_ack_col)
    # transactional: committed → acked with offset; aborted → failed, no offset.
    PR.add(prod=np.full(M, TX), seq=j, part=t_part, off=np.where(t_aborted, -1, t_off),
           status=np.where(t_aborted, FAILED, ACKED), send=t_send, ack=t_ack, txn_seq=t_txn,
           txn_out=np.where(t_aborted, 1, 0))
    # overwriters pw: acked at the targets' offsets (seq follows offset order per partition).
    n_ow = len(over)
    PR.add(prod=np.full(n_ow, PW), seq=np.arange(n_ow), part=n_part[over], off=n_off[over],
           status=np.full(n_ow, ACKED), send=n_send[over] + 1, ack=n_ack[over] + 1)
    # pfail: failed outside a transaction, later consumed at end offsets.
    n_pf = spec.n("unexpected_failed")
    pf_part = np.arange(n_pf) % K
    pf_off = alloc_end(pf_part)
    pf_send = t0 + duration_us // 2 + np.arange(n_pf) * 10
    PR.add(prod=np.full(n_pf, PFAIL), seq=np.arange(n_pf), part=pf_part,
           status=np.full(n_pf, FAILED), send=pf_send, ack=pf_send + 4_000)
    # pdiv: indeterminate, seen by c-div at divergent targets' offsets.
    n_dv = len(div)
    PR.add(prod=np.full(n_dv, PDIV), seq=np.arange(n_dv), status=np.full(n_dv, INDET),
           send=n_send[div] + 2)
    # prec: indeterminate, consumed at end offsets.
    n_rc = spec.n("recovered")
    rc_part = np.arange(n_rc) % K
    rc_off = alloc_end(rc_part)
    rc_send = t0 + duration_us // 3 + np.arange(n_rc) * 10
    PR.add(prod=np.full(n_rc, PREC), seq=np.arange(n_rc), status=np.full(n_rc, INDET), send=rc_send)
    produced = PR.done()

    # --- consumed rows
    C = max(1, min(3, K))
    CO = _Cols(["consumer", "group", "phase", "part", "off", "prod", "seq", "iso", "recv"])
    # consumer ids: 0..C-1 = c0.., C = drain, C+1 = c-div; groups: 0 g0, 1 g-div, -1 none
    e2e = lambda n: rng.integers(500, 8000, n)  # noqa: E731
    seen = (n_status == ACKED)
    seen_run = seen.copy()
    seen_drain = seen.copy()
    for arr in (lost, over):
        seen_run[arr] = seen_drain[arr] = False
    seen_run[skip] = False
    drain_start = t0 + duration_us + 10_000_000

    def run_rows(prod, seq, part, off, base_ts):
        n = len(part)
        CO.add(consumer=part % C, group=np.zeros(n), phase=np.full(n, RUN), part=part, off=off,
               prod=prod, seq=seq, iso=np.ones(n), recv=base_ts + e2e(n))

    def drain_rows(prod, seq, part, off):
        n = len(part)
        CO.add(consumer=np.full(n, C), group=np.full(n, -1), phase=np.full(n, DRAIN), part=part,
               off=off, prod=prod, seq=seq, iso=np.ones(n),
               recv=drain_start + off * 10 + part)

    idx = np.flatnonzero(seen_run)
    run_rows(n_prod[idx], n_seq[idx], n_part[idx], n_off[idx], n_ack[idx])
    idx = np.flatnonzero(seen_drain)
    drain_rows(n_prod[idx], n_seq[idx], n_part[idx], n_off[idx])
    tc = np.flatnonzero(~t_aborted)
    run_rows(np.full(len(tc), TX), j[tc], t_part[tc], t_off[tc], t_ack[tc])
    drain_rows(np.full(len(tc), TX), j[tc], t_part[tc], t_off[tc])
    # overwriters at the targets' offsets
    for f in (run_rows, drain_rows):
        args = (np.full(n_ow, PW), np.arange(n_ow), n_part[over], n_off[over])
        f(*args, n_ack[over] + 1) if f is run_rows else f(*args)
    # duplicates: the same record again at a fresh offset
    dup_off = alloc_end(n_part[dup])
    run_rows(n_prod[dup], n_seq[dup], n_part[dup], dup_off, n_ack[dup] + 50_000)
    drain_rows(n_prod[dup], n_seq[dup], n_part[dup], dup_off)
    # ghosts never sent
    n_gh = spec.n("unexpected")
    gh_part = np.arange(n_gh) % K
    gh_off = alloc_end(gh_part)
    run_rows(np.full(n_gh, GHOST), np.arange(n_gh), gh_part, gh_off, np.full(n_gh, t0 + duration_us))
    drain_rows(np.full(n_gh, GHOST), np.arange(n_gh), gh_part, gh_off)
    # failed outside a transaction, consumed anyway
    run_rows(np.full(n_pf, PFAIL), np.arange(n_pf), pf_part, pf_off, pf_send + 1000)
    drain_rows(np.full(n_pf, PFAIL), np.arange(n_pf), pf_part, pf_off)
    # recovered indeterminate records
    run_rows(np.full(n_rc, PREC), np.arange(n_rc), rc_part, rc_off, rc_send + 1000)
    drain_rows(np.full(n_rc, PREC), np.arange(n_rc), rc_part, rc_off)
    # divergent: c-div (group g-div) sees a pdiv record at an acked record's offset
    CO.add(consumer=np.full(n_dv, C + 1), group=np.ones(n_dv), phase=np.full(n_dv, RUN),
           part=n_part[div], off=n_off[div], prod=np.full(n_dv, PDIV), seq=np.arange(n_dv),
           iso=np.ones(n_dv), recv=n_ack[div] + 3000)
    # aborted records read by g0 (read_committed)
    ab = np.flatnonzero(t_aborted)
    n_ar = spec.n("aborted_read")
    if n_ar > len(ab):
        raise ValueError("not enough aborted transactional records to inject aborted_read")
    ab = np.sort(rng.choice(ab, n_ar, replace=False)) if n_ar else ab[:0]
    run_rows(np.full(len(ab), TX), j[ab], t_part[ab], t_off[ab], t_send[ab] + 9000)
    # redelivered: g0 gets the position once more, later
    run_rows(n_prod[redel], n_seq[redel], n_part[redel], n_off[redel], n_ack[redel] + 2_000_000)
    consumed = CO.done()

    # --- commits: g0 commits every 1000 offsets per partition, and the log end at the end.
    cm_part, cm_off, cm_ts = [], [], []
    for p in range(K):
        ends = np.arange(1000, int(end_off[p]), 1000, dtype=np.int64)
        cm_part.append(np.full(len(ends) + 1, p))
        cm_off.append(np.append(ends, end_off[p]))
        cm_ts.append(np.append(t0 + (ends * K * interval).astype(np.int64), drain_start - 1_000_000))
    commits = {"part": np.concatenate(cm_part), "off": np.concatenate(cm_off),
               "ts": np.concatenate(cm_ts)}

    _write(run_dir, spec, names, produced, consumed, commits, faults, t0, duration_us,
           drain_start, C)
    counts = {"sent": len(produced["seq"]),
              "acked": int((produced["status"] == ACKED).sum()),
              "failed": int((produced["status"] == FAILED).sum()),
              "indeterminate": int((produced["status"] == INDET).sum()),
              "consumed": len(consumed["seq"])}
    return {"anomalies": expected_anomalies(spec), "counts": counts,
            "faults": [f[0] for f in faults]}


# ------------------------------------------------------------------ writing

def _nullable(a: np.ndarray, typ) -> pa.Array:
    return pa.array(a, type=typ, mask=(a < 0))


def _write(run_dir: Path, spec, names, produced, consumed, commits, faults, t0, duration_us,
           drain_start, C) -> None:
    hist = run_dir / "history"
    for t in ("produced", "consumed", "commits", "events"):
        (hist / t).mkdir(parents=True, exist_ok=True)
    name_arr = pa.array(names)
    topic = spec.topic
    chunk = spec.chunk_rows

    def rid(prod, seq):
        return pc.binary_join_element_wise(pc.take(name_arr, pa.array(prod)),
                                           pc.cast(pa.array(seq), pa.string()), "-")

    n = len(produced["seq"])
    err_names = pa.array([None, "MSG_TIMED_OUT", "_TIMED_OUT"])
    for part_no, lo in enumerate(range(0, max(n, 1), chunk)):
        s = slice(lo, min(lo + chunk, n))
        prod, seq = produced["prod"][s], produced["seq"][s]
        st = produced["status"][s]
        is_tx = prod == names.index("tx0")
        txn_out = produced["txn_out"][s]
        cols = {
            "run_id": pa.array(np.full(len(seq), spec.run_id, dtype=object), pa.string()),
            "producer": pc.take(name_arr, pa.array(prod)),
            "seq": pa.array(seq, pa.int64()),
            "record_id": rid(prod, seq),
            "key": pa.nulls(len(seq), pa.string()),
            "topic": pa.array(np.full(len(seq), topic, dtype=object), pa.string()),
            "partition": _nullable(produced["part"][s], pa.int32()),
            "offset": _nullable(produced["off"][s], pa.int64()),
            "status": pc.take(pa.array(list(STATUS)), pa.array(st)),
            "error": pc.take(err_names, pa.array(st)),
            "send_ts_us": pa.array(produced["send"][s], pa.int64()),
            "ack_ts_us": _nullable(produced["ack"][s], pa.int64()),
            "txn_id": pa.array(np.where(is_tx, "tx0", None), pa.string()),
            "txn_seq": _nullable(produced["txn_seq"][s], pa.int64()),
            "txn_outcome": pc.take(pa.array([None, "committed", "aborted"]),
                                   pa.array(np.where(is_tx, txn_out + 1, 0))),
        }
        pq.write_table(pa.table(cols, schema=SCHEMAS["produced"]),
                       hist / "produced" / f"synthetic-{part_no:06d}.parquet")

    consumers = pa.array([f"c{i}" for i in range(C)] + ["drain", "c-div"])
    groups = pa.array([None, "g0", "g-div"])
    n = len(consumed["seq"])
    for part_no, lo in enumerate(range(0, max(n, 1), chunk)):
        s = slice(lo, min(lo + chunk, n))
        seq = consumed["seq"][s]
        cols = {
            "run_id": pa.array(np.full(len(seq), spec.run_id, dtype=object), pa.string()),
            "consumer": pc.take(consumers, pa.array(consumed["consumer"][s])),
            "group_id": pc.take(groups, pa.array(consumed["group"][s] + 1)),
            "phase": pc.take(pa.array(["run", "drain"]), pa.array(consumed["phase"][s])),
            "topic": pa.array(np.full(len(seq), topic, dtype=object), pa.string()),
            "partition": pa.array(consumed["part"][s], pa.int32()),
            "offset": pa.array(consumed["off"][s], pa.int64()),
            "key": pa.nulls(len(seq), pa.string()),
            "record_id": rid(consumed["prod"][s], seq),
            "isolation": pc.take(pa.array(["read_uncommitted", "read_committed"]),
                                 pa.array(consumed["iso"][s])),
            "recv_ts_us": pa.array(consumed["recv"][s], pa.int64()),
            # not told: the poll kinds are checked on the casebook
            # (tests/unit/spark/test_reconcile_cases.py), not here
            "poll_seq": pa.nulls(len(seq), pa.int64()),
            "assignment": pa.nulls(len(seq), pa.int32()),
        }
        pq.write_table(pa.table(cols, schema=SCHEMAS["consumed"]),
                       hist / "consumed" / f"synthetic-{part_no:06d}.parquet")

    k = len(commits["part"])
    pq.write_table(pa.table({
        "run_id": [spec.run_id] * k,
        "consumer": [f"c{p % C}" for p in commits["part"]],
        "group_id": ["g0"] * k, "topic": [topic] * k,
        "partition": pa.array(commits["part"], pa.int32()),
        "offset": pa.array(commits["off"], pa.int64()),
        "ok": [True] * k, "error": pa.nulls(k, pa.string()),
        "ts_us": pa.array(commits["ts"], pa.int64())}, schema=SCHEMAS["commits"]),
        hist / "commits" / "synthetic-000000.parquet")

    ev = []

    def e(ts, kind, name, target=None, **detail):
        ev.append({"run_id": spec.run_id, "ts_us": int(ts), "kind": kind, "name": name,
                   "target": target, "detail": json.dumps(detail, sort_keys=True)})

    e(t0 - 1_000_000, "phase", "load-start")
    for p in range(spec.partitions):
        e(t0 - 900_000, "observe", "leader", None, topic=topic, partition=p, leader=p % 3 + 1,
          isr=[1, 2, 3])
    for name, part, start, end in faults:
        leader = part % 3 + 1
        target = f"kafka-{leader}"
        e(start, "fault", "kill-leader", target, fault_id=name, signal="SIGKILL")
        e(start + 200_000, "observe", "isr", None, topic=topic, partition=part, leader=-1,
          isr=[b for b in (1, 2, 3) if b != leader])
        e(end - 10_000, "observe", "leader", None, topic=topic, partition=part,
          leader=leader % 3 + 1, isr=[b for b in (1, 2, 3) if b != leader])
        e(end, "heal", "kill-leader", target, fault_id=name)
        e(end + 2_000_000, "observe", "isr", None, topic=topic, partition=part,
          leader=leader % 3 + 1, isr=[1, 2, 3])
    e(t0 + duration_us, "phase", "load-end")
    e(drain_start - 1, "phase", "drain-start")
    e(drain_start + 5_000_000, "phase", "drain-end")
    pq.write_table(pa.Table.from_pylist(ev, schema=SCHEMAS["events"]),
                   hist / "events" / "synthetic-000000.parquet")

    if spec.write_scenario:
        # a scenario of the project's model (harness/scenario.py) the verifier takes
        # its facts from: idempotent, acks=all, min ISR 2, commits after processing
        (run_dir / "scenario.yaml").write_text(yaml.safe_dump({
            "name": "synthetic",
            "description": f"benchmarks/synthetic.py: {spec.records} records, "
                           f"injected {dict(spec.inject)}, seed {spec.seed}",
            "seed": spec.seed,
            "cluster": {"mode": "kraft-combined", "version": "3.9", "brokers": 3},
            "topics": [{"name": topic, "partitions": spec.partitions, "replication_factor": 3,
                        "configs": {"min.insync.replicas": 2}}],
            "workload": {"duration_s": max(1, duration_us // 1_000_000),
                         "producers": [{"name": "p0", "topic": topic, "rate": spec.rate_per_s}],
                         "consumers": [{"group_id": "g0", "topics": [topic],
                                        "isolation": "read_committed"}]},
        }, sort_keys=False))
        (run_dir / "manifest.json").write_text(json.dumps({
            "run_id": spec.run_id, "generator": "benchmarks/synthetic.py",
            "seed": spec.seed}, indent=2))


def main(argv: list[str] | None = None) -> int:
    import argparse
    ap = argparse.ArgumentParser(description="write a synthetic run history")
    ap.add_argument("run_dir")
    ap.add_argument("--records", type=int, default=10_000)
    ap.add_argument("--each", type=int, default=3, help="inject this many of every kind")
    ap.add_argument("--seed", type=int, default=7)
    a = ap.parse_args(argv)
    out = generate(a.run_dir, SyntheticSpec(records=a.records, seed=a.seed,
                                            inject={k: a.each for k in INJECTABLE}))
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
