#!/usr/bin/env bash
# `make test`: the Spark-marked tests and all the others, as two pytest processes at once.
#
# The suite is one pytest process per part because the Spark fixture warehouse is built once
# per process: the Spark part (~17 minutes on 2 cores) keeps one JVM busy, while the rest
# (~14 minutes, less than half of it on a CPU: servers starting, browsers, subprocesses,
# deliberate waits) fits in its gaps. Run one after the other, they took 30 minutes; side by
# side, about as long as the longer part. Each part has its own --basetemp (pytest's numbered
# temp folders would otherwise be pruned under the other's feet); the other part's output
# is printed when both are done, and the exit code is non-zero if either failed.
#
# PYTEST_ARGS that choose markers themselves (-m) run as one process, as given.
set -uo pipefail
cd "$(dirname "$0")/.."
python=".venv/bin/python"

for arg in "$@"; do
  if [[ "$arg" == "-m" || "$arg" == -m* ]]; then
    exec "$python" -m pytest "$@"
  fi
done

work="$(mktemp -d "${TMPDIR:-/tmp}/icecore-test.XXXXXX")"
trap 'rm -rf "$work"' EXIT

"$python" -m pytest -m "not spark" -p no:cacheprovider --basetemp="$work/others" "$@" \
  >"$work/others.log" 2>&1 &
others=$!

"$python" -m pytest -m spark --basetemp="$work/spark" "$@"
spark_rc=$?
wait "$others"
others_rc=$?

echo
echo "=== the tests without the Spark fixture (run alongside the above) ==="
cat "$work/others.log"

# 5 = no test collected on that side (a path holding only one kind): not a failure alone.
if [[ $spark_rc -eq 5 && $others_rc -eq 5 ]]; then exit 5; fi
[[ $spark_rc -eq 5 ]] && spark_rc=0
[[ $others_rc -eq 5 ]] && others_rc=0
if [[ $spark_rc -ne 0 || $others_rc -ne 0 ]]; then
  echo "make test: Spark part exit $spark_rc, other part exit $others_rc" >&2
  exit 1
fi
