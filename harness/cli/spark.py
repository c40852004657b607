"""`harness spark status|stop`: the local Spark Connect server verifies run on
(spark_reports/connect_server.py)."""
from __future__ import annotations

import argparse


def _status(args: argparse.Namespace) -> int:
    from spark_reports.connect_server import idle_timeout_s, status
    s = status()
    if s is None:
        print(f"spark: no server running (the next verify starts one; it stops after "
              f"{idle_timeout_s() / 60:.0f} min idle)")
        return 0
    if not s["alive"]:
        print(f"spark: server {s['url']} is gone (JVM pid {s['jvm_pid']}); `harness gc` forgets it")
        return 1
    mem = s["memory"]
    print(f"spark: server {s['url']}, JVM pid {s['jvm_pid']} (supervisor {s['supervisor_pid']}), "
          f"up {s['up_s']} s, Java {s['java']}")
    print(f"  memory: {mem.get('rss_mib', '?')} MiB resident, peak {mem.get('peak_rss_mib', '?')} MiB")
    print(f"  idle {s['idle_s']} s of {s['idle_timeout_s']:.0f} s before it stops; log: {s['log']}")
    for pid, about in s["verifying"]:
        print(f"  verifying: {about or '?'} (pid {pid})")
    if not s["verifying"]:
        print("  verifying: nothing")
    return 0


def _stop(args: argparse.Namespace) -> int:
    from spark_reports.connect_server import live_leases, stop_server
    busy = live_leases()
    state = stop_server()
    if state is None:
        print("spark: no server running")
        return 0
    print(f"spark: stopped server {state.display_url} (JVM pid {state.jvm_pid})")
    for pid, about in busy:
        print(f"  a verify was using it and will fail: {about} (pid {pid})")
    return 0


def add_parser(sub) -> None:
    sp = sub.add_parser("spark", help="the local Spark Connect server that verifies runs")
    ssub = sp.add_subparsers(dest="spark_command", required=True)
    ssub.add_parser("status", help="whether it runs, its memory, what it verifies"
                    ).set_defaults(func=_status)
    ssub.add_parser("stop", help="stop it now (the next verify starts a new one)"
                    ).set_defaults(func=_stop)
