"""The spec's counting rules as plain SQL in DuckDB: the single-machine reference.

Written independently of families/records/views.py (row-numbered positions,
EXISTS / NOT EXISTS instead of the Spark views), so that identical counts from
both mean something. Benchmark-only dependency: `pip install .[bench]`.

    python benchmarks/duckdb_reference.py RUN_DIR     # prints counts as JSON
"""
from __future__ import annotations

import json
import sys
import time

from core.history import SCHEMAS, part_files

QUERIES = {
    "sent": "SELECT count(*) FROM produced",
    "acked": "SELECT count(*) FROM produced WHERE status = 'acked'",
    "failed": "SELECT count(*) FROM produced WHERE status = 'failed'",
    "indeterminate": "SELECT count(*) FROM produced WHERE status = 'indeterminate'",
    "consumed": "SELECT count(*) FROM consumed",

    "lost": """
        SELECT count(DISTINCT p.record_id) FROM produced p
        WHERE p.status = 'acked'
          AND NOT EXISTS (SELECT 1 FROM consumed c WHERE c.record_id = p.record_id)""",
    "overwritten": """
        SELECT count(DISTINCT p.record_id) FROM produced p
        WHERE p.status = 'acked' AND p."offset" IS NOT NULL AND p.partition IS NOT NULL
          AND EXISTS (SELECT 1 FROM consumed c
                      WHERE c.topic = p.topic AND c.partition = p.partition
                        AND c."offset" = p."offset"
                        AND (c.record_id IS NULL OR c.record_id <> p.record_id))""",
    "duplicate": """
        SELECT count(*) FROM (
          SELECT record_id FROM consumed WHERE record_id IS NOT NULL
          GROUP BY record_id
          HAVING count(DISTINCT topic || '/' || partition || '/' || "offset") >= 2)""",
    "reordered": """
        WITH ranked AS (
          SELECT record_id, topic, partition, "offset",
                 row_number() OVER (PARTITION BY record_id
                                    ORDER BY CASE WHEN phase = 'drain' THEN 0 ELSE 1 END,
                                             recv_ts_us, topic, partition, "offset") AS rn
          FROM consumed WHERE record_id IS NOT NULL),
        pos AS (SELECT record_id, topic, partition, "offset" FROM ranked WHERE rn = 1),
        seqd AS (
          SELECT p.record_id, pos."offset" AS o,
                 max(pos."offset") OVER (PARTITION BY p.producer, pos.topic, pos.partition
                                         ORDER BY p.seq
                                         ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS m
          FROM produced p JOIN pos ON pos.record_id = p.record_id)
        SELECT count(DISTINCT record_id) FROM seqd WHERE o < m""",
    "unexpected": """
        SELECT count(DISTINCT c.record_id) FROM consumed c
        LEFT JOIN produced p ON p.record_id = c.record_id
        WHERE c.record_id IS NOT NULL
          AND (p.record_id IS NULL OR (p.status = 'failed' AND p.txn_id IS NULL))""",
    "divergent": """
        SELECT count(*) FROM (
          SELECT topic, partition, "offset" FROM consumed
          GROUP BY topic, partition, "offset"
          HAVING count(DISTINCT coalesce(record_id, chr(0) || 'foreign')) > 1)""",
    "aborted_read": """
        SELECT count(DISTINCT c.record_id) FROM consumed c
        JOIN produced p ON p.record_id = c.record_id
        WHERE c.isolation = 'read_committed' AND p.txn_outcome = 'aborted'""",
    "torn_transaction": """
        WITH seen AS (
          SELECT record_id, bool_or(isolation = 'read_committed') AS rc FROM consumed
          WHERE record_id IS NOT NULL GROUP BY record_id),
        t AS (
          SELECT p.producer, p.txn_seq, count(*) AS n,
                 sum(CASE WHEN p.txn_outcome = 'committed' THEN (s.record_id IS NOT NULL)::INT
                          ELSE coalesce(s.rc, false)::INT END) AS v
          FROM produced p LEFT JOIN seen s ON s.record_id = p.record_id
          WHERE p.txn_seq IS NOT NULL AND p.txn_outcome IN ('committed', 'aborted')
          GROUP BY p.producer, p.txn_seq)
        SELECT count(*) FROM t WHERE v > 0 AND v < n""",
    "skipped": """
        WITH high AS (
          SELECT group_id, topic, partition, max("offset") AS hi FROM commits
          WHERE ok AND group_id IS NOT NULL AND consumer <> 'drain'
          GROUP BY group_id, topic, partition),
        drained AS (
          SELECT topic, partition, "offset", min(record_id) AS rid FROM consumed
          WHERE phase = 'drain' GROUP BY topic, partition, "offset"),
        rc AS (
          SELECT group_id, bool_or(isolation = 'read_committed') AS rc FROM consumed
          WHERE phase = 'run' AND group_id IS NOT NULL GROUP BY group_id),
        aborted AS (SELECT record_id FROM produced WHERE txn_outcome = 'aborted'),
        received AS (
          SELECT DISTINCT group_id, topic, partition, "offset" FROM consumed
          WHERE phase = 'run' AND group_id IS NOT NULL)
        SELECT count(*) FROM (
          SELECT DISTINCT h.group_id, d.topic, d.partition, d."offset"
          FROM drained d JOIN high h
            ON h.topic = d.topic AND h.partition = d.partition AND d."offset" < h.hi
          LEFT JOIN rc ON rc.group_id = h.group_id
          WHERE NOT EXISTS (SELECT 1 FROM received r
                            WHERE r.group_id = h.group_id AND r.topic = d.topic
                              AND r.partition = d.partition AND r."offset" = d."offset")
            AND NOT (coalesce(rc.rc, false)
                     AND d.rid IN (SELECT record_id FROM aborted)))""",
    "redelivered": """
        SELECT coalesce(sum(n - 1), 0) FROM (
          SELECT count(*) AS n FROM consumed
          WHERE phase = 'run' AND group_id IS NOT NULL
          GROUP BY group_id, topic, partition, "offset")""",
    "poll_skip": """
        WITH j AS (
          SELECT * FROM consumed
          WHERE phase = 'run' AND poll_seq IS NOT NULL AND assignment IS NOT NULL),
        gen AS (
          SELECT consumer, assignment, topic, partition, min("offset") AS lo,
                 max("offset") AS hi, bool_or(isolation = 'read_committed') AS rc
          FROM j GROUP BY consumer, assignment, topic, partition),
        cand AS (
          SELECT DISTINCT g.consumer, g.assignment, d.topic, d.partition, d."offset"
          FROM gen g JOIN consumed d
            ON d.phase = 'drain' AND d.topic = g.topic AND d.partition = g.partition
           AND d."offset" > g.lo AND d."offset" < g.hi
          WHERE NOT (g.rc AND coalesce(d.record_id IN (
                       SELECT record_id FROM produced WHERE txn_outcome = 'aborted'), false)))
        SELECT count(*) FROM (
          SELECT DISTINCT consumer, topic, partition, "offset" FROM cand c
          WHERE NOT EXISTS (SELECT 1 FROM j
                            WHERE j.consumer = c.consumer AND j.assignment = c.assignment
                              AND j.topic = c.topic AND j.partition = c.partition
                              AND j."offset" = c."offset"))""",
    "nonmonotonic_poll": """
        WITH j AS (
          SELECT "offset",
                 max("offset") OVER (PARTITION BY consumer, assignment, topic, partition
                                     ORDER BY poll_seq, "offset"
                                     ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS m
          FROM consumed
          WHERE phase = 'run' AND poll_seq IS NOT NULL AND assignment IS NOT NULL)
        SELECT count(*) FROM j WHERE "offset" <= m""",
    "recovered": """
        SELECT count(DISTINCT p.record_id) FROM produced p
        WHERE p.status = 'indeterminate'
          AND EXISTS (SELECT 1 FROM consumed c WHERE c.record_id = p.record_id)""",
}

ANOMALIES = ("lost", "overwritten", "duplicate", "reordered", "unexpected", "divergent",
             "aborted_read", "torn_transaction", "skipped", "redelivered", "recovered", "poll_skip",
             "nonmonotonic_poll")
COUNTS = ("sent", "acked", "failed", "indeterminate", "consumed")


def reference_counts(run_dir: str, threads: int | None = None) -> dict:
    import duckdb

    con = duckdb.connect()
    if threads:
        con.execute(f"SET threads = {int(threads)}")
    for table in ("produced", "consumed", "commits"):
        files = [str(f) for f in part_files(run_dir, table)]
        if files:
            # union_by_name: histories written before poll_seq and assignment lack them
            con.execute(f"CREATE VIEW {table}_files AS SELECT * FROM "
                        f"read_parquet({files!r}, union_by_name = true)")
            have = {r[0] for r in con.execute(f"DESCRIBE {table}_files").fetchall()}
            cols = ", ".join(f'"{f.name}"' if f.name in have
                             else f'NULL::{_duck_type(f.type)} AS "{f.name}"'
                             for f in SCHEMAS[table])
            con.execute(f"CREATE VIEW {table} AS SELECT {cols} FROM {table}_files")
        else:
            cols = ", ".join(f'"{f.name}" {_duck_type(f.type)}' for f in SCHEMAS[table])
            con.execute(f"CREATE TABLE {table} ({cols})")
    t0 = time.monotonic()
    out = {"counts": {}, "anomalies": {}, "query_seconds": {}}
    for name, sql in QUERIES.items():
        t = time.monotonic()
        value = int(con.execute(sql).fetchone()[0])
        out["query_seconds"][name] = round(time.monotonic() - t, 3)
        out["anomalies" if name in ANOMALIES else "counts"][name] = value
    out["seconds"] = round(time.monotonic() - t0, 3)
    return out


def _duck_type(t) -> str:
    import pyarrow as pa
    return {pa.string(): "VARCHAR", pa.int64(): "BIGINT", pa.int32(): "INTEGER",
            pa.bool_(): "BOOLEAN"}[t]


if __name__ == "__main__":
    print(json.dumps(reference_counts(sys.argv[1]), indent=2))
