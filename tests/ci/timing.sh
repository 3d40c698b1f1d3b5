# Sourced by .ci/run and packaging/run-tests: one timed line per stage.
# timed NAME CMD...: runs CMD (an external command, or a function that
# returns its own failure: errexit does not reach inside a command run
# under ||) and prints "== NAME: N s". Where MEMCG_STAGE_TIMES names a file
# it appends "NAME<TAB>seconds<TAB>exit status" to it; a stage timed inside
# another (run-tests' build inside .ci/run's run-tests) is named
# "OUTER / INNER", so tests/ci/budget.py sums the top level only.
timed() {
  local name=$1 t0=$SECONDS rc=0 dt
  shift
  [ -n "${MEMCG_STAGE_PARENT:-}" ] && name="$MEMCG_STAGE_PARENT / $name"
  echo "== $name: started $(date -u +%H:%M:%S)"
  MEMCG_STAGE_PARENT=$name "$@" || rc=$?
  dt=$((SECONDS - t0))
  if [ "$rc" -eq 0 ]; then echo "== $name: $dt s"; else echo "== $name: $dt s, FAILED (exit $rc)"; fi
  if [ -n "${MEMCG_STAGE_TIMES:-}" ]; then printf '%s\t%d\t%d\n' "$name" "$dt" "$rc" >> "$MEMCG_STAGE_TIMES"; fi
  return "$rc"
}
