"""Small pandas checks of a run history, for test assertions (the Spark
reconciler is exercised separately where a test says so)."""
from __future__ import annotations

import pandas as pd

from core.history import read_table


def table(run_dir: str, name: str) -> pd.DataFrame:
    return read_table(run_dir, name).to_pandas()


def lost(produced: pd.DataFrame, consumed: pd.DataFrame) -> set[str]:
    acked = set(produced.loc[produced.status == "acked", "record_id"])
    return acked - set(consumed.record_id.dropna())


def duplicates_in_drain(consumed: pd.DataFrame) -> pd.Series:
    d = consumed[consumed.phase == "drain"]
    n = d.groupby("record_id")[["partition", "offset"]].apply(
        lambda g: len(set(zip(g.partition, g.offset))))
    return n[n > 1]


def skipped(consumed: pd.DataFrame, commits: pd.DataFrame, group: str) -> int:
    """Drain offsets below the group's highest accepted commit that no run consumer
    of the group received (the spec's definition)."""
    ok = commits[(commits.group_id == group) & commits.ok]
    if ok.empty:
        return 0
    high = ok.groupby(["topic", "partition"]).offset.max()
    drain = consumed[consumed.phase == "drain"][["topic", "partition", "offset"]]
    run = consumed[(consumed.phase == "run") & (consumed.group_id == group)]
    got = set(zip(run.topic, run.partition, run.offset))
    n = 0
    for t, p, o in zip(drain.topic, drain.partition, drain.offset):
        h = high.get((t, p))
        if h is not None and o < h and (t, p, o) not in got:
            n += 1
    return n


def redelivered(consumed: pd.DataFrame, group: str) -> int:
    run = consumed[(consumed.phase == "run") & (consumed.group_id == group)]
    k = run.groupby(["topic", "partition", "offset"]).size()
    return int((k - 1).sum())
