"""Do two checkouts verify the same histories to the same summary.json?

For each history (a run directory): copy it twice, `harness verify` one copy with each
checkout's code (the same virtualenv, PYTHONPATH pointing at the checkout), and
compare the two summaries field by field, leaving out the clock of a verify
(generated_at, verify_seconds, step_seconds). Prints the differing fields and exits 1
when any differ.

    .venv/bin/python benchmarks/same_summaries.py --base /tmp/base \\
        tests/data/stored_runs/acks1-lost tests/data/stored_runs/transactions \\
        tests/data/stored_runs/external benchmarks/data/synthetic-100000
"""
from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CLOCK = ("generated_at", "verify_seconds", "step_seconds")


def verify(checkout: Path, source: Path, into: Path) -> dict:
    """summary.json of `harness verify` of a copy of source, with checkout's code; each
    checkout on a local Spark Connect server of its own (its state under `into`)."""
    run = into / source.name
    shutil.copytree(source, run, ignore=shutil.ignore_patterns("report"))
    proc = subprocess.run([sys.executable, "-m", "harness.cli", "verify", str(run)],
                          cwd=checkout, env={**_passed_env(), "PYTHONPATH": str(checkout),
                                             "PATH": "/usr/bin:/bin",
                                             "HARNESS_STATE": str(into / "state")},
                          capture_output=True, text=True)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{checkout}: harness verify {run} exited {proc.returncode}:\n"
                         f"{proc.stderr[-2000:]}")
    summary = json.loads((run / "report" / "summary.json").read_text())
    return {k: v for k, v in summary.items() if k not in CLOCK}


def _passed_env() -> dict:
    import os
    return {k: v for k, v in os.environ.items()
            if k.startswith(("HARNESS_", "JAVA_HOME", "HOME", "XDG_"))}


def differences(a, b, path: str = "") -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        return [d for k in sorted(set(a) | set(b), key=str)
                for d in differences(a.get(k, "<missing>"), b.get(k, "<missing>"), f"{path}.{k}")]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b, strict=True))
                for d in differences(x, y, f"{path}[{i}]")]
    return [] if a == b else [f"{path}: {json.dumps(a)[:200]} != {json.dumps(b)[:200]}"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", type=Path, required=True, help="the other checkout")
    ap.add_argument("runs", type=Path, nargs="+")
    a = ap.parse_args()
    failed = 0
    with tempfile.TemporaryDirectory(prefix="same-summaries-") as tmp:
        for source in a.runs:
            base = verify(a.base.resolve(), source.resolve(), Path(tmp) / "base")
            this = verify(ROOT, source.resolve(), Path(tmp) / "this")
            diff = differences(base, this)
            failed += bool(diff)
            print(f"{source}: {'identical' if not diff else f'{len(diff)} fields differ'} "
                  f"({len(base)} top-level fields, the clock left out)")
            for d in diff[:20]:
                print(f"  {d}")
        for side in ("base", "this"):
            checkout = a.base.resolve() if side == "base" else ROOT
            subprocess.run([sys.executable, "-m", "harness.cli", "spark", "stop"], cwd=checkout,
                           env={**_passed_env(), "PYTHONPATH": str(checkout),
                                "HARNESS_STATE": str(Path(tmp) / side / "state")},
                           capture_output=True)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
