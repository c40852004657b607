#!/usr/bin/env bash
# The inner loop, in seconds: ruff, the import contracts, then the unit tests of what you
# changed. scripts/test.sh is the whole check (every test, real clusters too); run it
# before you hand a change in.
#
#   bash scripts/dev.sh                 # what changed since main (committed, staged, unstaged, untracked)
#   bash scripts/dev.sh --base HEAD~3   # ... since another commit
#   bash scripts/dev.sh --quick         # only the tests that import the changed modules themselves
#   bash scripts/dev.sh --all           # every unit test
#   bash scripts/dev.sh --spark         # also the unit tests that start a local PySpark session
#   bash scripts/dev.sh --cluster       # also the real-cluster tests of what changed (Docker, serial, minutes)
#   bash scripts/dev.sh -- -k toxiproxy # anything after -- goes to pytest
#
# Which tests: a changed test file runs itself; a changed file below a package (core/,
# clusters/, faults/, ...) runs the test files that import that package (a grep: tests
# that reach it only through a higher package are not picked; test.sh runs those); any
# other changed file (docs/, a recipe) runs the tests that name its path. A change to
# core/, a conftest.py or pyproject.toml runs every unit test. --quick narrows a changed
# module to the test files that import that module (the package's, when none does).
# VENV=/path/to/.venv picks another virtualenv (default: .venv in this checkout).
set -uo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
venv=${VENV:-.venv}
# The checkout's own code, also when the venv was installed (editable) from another one.
export PYTHONPATH="$repo${PYTHONPATH:+:$PYTHONPATH}"
PACKAGES="core clusters faults workloads families spark_reports verifiers harness"

base=main all=0 quick=0 markers="not cluster and not spark" spark=0 cluster=0 extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --base) base=$2; shift 2 ;;
    --all) all=1; shift ;;
    --quick) quick=1; shift ;;
    --spark) markers="not cluster" spark=1; shift ;;
    --cluster) cluster=1; shift ;;
    --) shift; extra=("$@"); break ;;
    -h|--help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "dev: unknown option $1 (see: bash scripts/dev.sh --help)" >&2; exit 2 ;;
  esac
done
for tool in ruff lint-imports pytest; do
  [ -x "$venv/bin/$tool" ] || { echo "dev: no $venv/bin/$tool (run: bash scripts/setup.sh, or set VENV=)" >&2; exit 2; }
done

step() {  # step NAME COMMAND...: print it (as it could be pasted), run it, say how long it took
  local name=$1 start=$SECONDS rc; shift
  echo "dev: $name: $(printf '%q ' "$@")"
  if [ -n "${QUIET:-}" ]; then   # its output only when it fails
    local out; out=$("$@" 2>&1); rc=$?
    [ $rc -eq 0 ] || echo "$out"
  else
    "$@"; rc=$?
  fi
  echo "dev: $name: exit $rc in $((SECONDS - start)) s"
  return $rc
}

changed_files() {
  git rev-parse --verify -q "$base" >/dev/null || base=HEAD
  { git diff --name-only "$base"...HEAD 2>/dev/null; git diff --name-only HEAD
    git ls-files --others --exclude-standard; } | sort -u
}

importers_of_module() {  # importers_of_module DIR pkg/sub/mod.py: the test files importing it; 1 if none
  local dir=$1 f=$2 mod parent name found
  case "$f" in *.py) ;; *) return 1 ;; esac
  mod=${f%.py}; mod=${mod//\//.}; parent=${mod%.*}; name=${mod##*.}
  [ "$name" = __init__ ] && return 1
  found=$(grep -rlE "^\s*(from|import) ${mod//./\\.}( |\.|$)|^\s*from ${parent//./\\.} import .*\b$name\b" \
    "$dir" --include='test_*.py')
  [ -n "$found" ] && echo "$found"
}

tests_for() {  # the unit (or integration) test files for the changed files; "all" for everything
  local dir=$1 f pkg
  while read -r f; do
    [ -n "$f" ] || continue
    case "$f" in
      core/*|*conftest.py|pyproject.toml|.importlinter) echo all; return ;;
      "$dir"/*.py) [ -f "$f" ] && echo "$f"; continue ;;
    esac
    pkg=${f%%/*}
    if [[ " $PACKAGES " == *" $pkg "* ]] && [ "$pkg" != "$f" ]; then
      [ $quick -eq 1 ] && importers_of_module "$dir" "$f" && continue
      grep -rlE "^\s*(from|import) $pkg(\.| |$)" "$dir" --include='test_*.py'
    else
      grep -rlF "$f" "$dir" --include='test_*.py'
    fi
  done | sort -u
}

step ruff "$venv/bin/ruff" check . || { echo "dev: fix: $venv/bin/ruff check --fix ." >&2; exit 1; }
QUIET=1 step import-contracts "$venv/bin/lint-imports" --no-cache \
  || { echo "dev: an import breaks the layers (.importlinter, docs/architecture.md)" >&2; exit 1; }

files=$(changed_files)
echo "dev: changed since $base: $(echo "$files" | grep -c . ) file(s)"
if [ $all -eq 1 ]; then units=all; else units=$(echo "$files" | tests_for tests/unit); fi
[[ "$units" == *all* ]] && units=tests/unit
# tests/unit/spark start PySpark sessions (not all of them carry the marker): only with --spark
ignore=()
if [ $spark -eq 0 ]; then
  ignore=(--ignore=tests/unit/spark)
  units=$(echo "$units" | grep -v '^tests/unit/spark/')
fi
rc=0
if [ -z "$units" ]; then
  echo "dev: no unit test reaches what changed (--all runs them all)"
else
  count=$(echo "$units" | wc -l)
  workers=0; { [ "$units" = tests/unit ] || [ "$count" -gt 6 ]; } && workers=2
  # shellcheck disable=SC2086 - one path per word
  step unit-tests "$venv/bin/pytest" -q -p no:cacheprovider -n $workers -m "$markers" "${ignore[@]}" \
    $units "${extra[@]}"
  rc=$?
  [ $rc -eq 5 ] && rc=0       # nothing collected under -m/-k is not a failure
fi
if [ $cluster -eq 1 ]; then
  integ=$(echo "$files" | tests_for tests/integration)
  [[ "$integ" == *all* ]] && integ=tests/integration
  if [ -n "$integ" ]; then
    # shellcheck disable=SC2086
    step cluster-tests "$venv/bin/pytest" -q -p no:cacheprovider -p no:xdist -m cluster --timeout 1200 $integ "${extra[@]}"
    r=$?; [ $r -ne 0 ] && [ $r -ne 5 ] && rc=$r
    "$venv/bin/harness" gc >/dev/null 2>&1 || true
  fi
fi
exit $rc
