#!/usr/bin/env bash
# Runs ruff and the import contracts, then every test: unit tests in parallel (pytest-xdist), then the real-cluster
# tests one at a time (they start Kafka containers; 2 cores fit one cluster).
# Extra arguments go to both pytest runs (e.g. -k leader). Tests marked `slow` run only when
# asked (CI's 90 min: each says what covers its path in CI): .venv/bin/pytest -m slow tests/unit;
# .venv/bin/pytest -p no:xdist -m "cluster and slow" tests/integration
set -uo pipefail
cd "$(dirname "$0")/.."
mkdir -p build
if ! .venv/bin/harness doctor >/dev/null; then
  .venv/bin/harness doctor
  echo "test: the machine is not ready; run: bash scripts/setup.sh" >&2
  exit 2
fi

.venv/bin/ruff check . || { echo "test: ruff found problems (.venv/bin/ruff check --fix .)" >&2; exit 1; }
# The layers of the house (.importlinter): a package imports only those below it, no cycle.
.venv/bin/lint-imports --no-cache || { echo "test: an import breaks the layers (.importlinter)" >&2; exit 1; }
# --durations: the unit run's slowest tests in CI's log, so its growth can be read there
.venv/bin/pytest -q -n 2 -m "not cluster and not slow" tests/unit --durations=30 --junitxml=build/unit.xml "$@"
unit=$?
.venv/bin/pytest -q -p no:xdist -m "cluster and not slow" tests/integration --timeout 1200 --durations=30 \
  --junitxml=build/integration.xml "$@"
integration=$?
.venv/bin/harness gc >/dev/null 2>&1 || true

# One closing line for both runs. Exit 5 (no test collected, e.g. under -k) is not a failure.
.venv/bin/python - <<'PY'
import xml.etree.ElementTree as ET
from pathlib import Path
t = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
for f in ("build/unit.xml", "build/integration.xml"):
    if Path(f).exists():
        for suite in ET.parse(f).getroot().iter("testsuite"):
            for k in t:
                t[k] += int(suite.get(k, 0))
failed = t["failures"] + t["errors"]
print(f"total: {t['tests'] - failed - t['skipped']} passed, {failed} failed, {t['skipped']} skipped")
PY
for rc in $unit $integration; do
  if [ "$rc" -ne 0 ] && [ "$rc" -ne 5 ]; then exit "$rc"; fi
done
exit 0
