# One evidence-matrix cell, sourced by each matrix's run.sh: run_cell NAME ARGS... runs
# `$HARNESS run ARGS` under the machine's cluster lock (900 s at most) into $RUNS_DIR and
# appends "cell, exit code, run dir, time" to $OUT; a cell already in $OUT is skipped,
# and none is started past $STOP_AT (HHMM, UTC; asked again once the lock is ours).
# shellcheck shell=bash
run_cell() {       # cell name, then the harness run arguments
  local cell=$1; shift
  grep -q "^$cell"$'\t' "$OUT" 2>/dev/null && return
  [ "$(date -u +%H%M)" \> "${STOP_AT:-2359}" ] && { echo "past STOP_AT, not starting $cell"; exit 0; }
  local log; log=$(mktemp)
  # STOP_AT again once the lock is ours: the wait for it can be long (others' cells, tests)
  # shellcheck disable=SC2016  # $0 and $@ are the inner shell's
  flock /tmp/harness-cluster.lock bash -c '[ "$(date -u +%H%M)" \> "$0" ] && exit 75; exec "$@"' \
    "${STOP_AT:-2359}" timeout 900 $HARNESS run "$@" --runs-dir "$RUNS_DIR" --plain >"$log" 2>&1
  local rc=$?
  [ $rc = 75 ] && { echo "past STOP_AT once the lock was ours, not starting $cell"; rm -f "$log"; exit 0; }
  local dir; dir=$(grep -o 'run dir: [^ ]*' "$log" | tail -1 | cut -d' ' -f3)
  printf '%s\t%s\t%s\t%s\n' "$cell" "$rc" "$dir" "$(date -u +%H:%M:%S)" >>"$OUT"
  echo "$cell -> exit $rc $dir"
  rm -f "$log"
}
