#!/usr/bin/env bash
# `make test-pythons`: the quick tests on the other supported Pythons (3.12 and 3.13), side by side.
# Usage: scripts/test-pythons.sh [VERSION ...]     (default: 3.12 3.13; PYTEST_ARGS is passed on)
#
# For each VERSION the interpreter is pyenv's newest VERSION.x (under PYENV_ROOT, ~/.pyenv by
# default), else pythonVERSION on PATH; a machine with neither says so and skips that Python.
# Its venv (.venv312, .venv313) is made from the pinned requirements, again whenever they change,
# then `pytest -m "$QUICK_MARKERS"` runs in it. The runs go in parallel (the machine is idle once
# `make test` is done), each with its own TMPDIR (pytest's tmp_path, the manifest cache and the
# bench's compiled Java live there) and without pytest's cache folder, so no run touches a file of
# another; each run's output goes to test-artifacts/pythons/VERSION.log, printed when all end.
# Python 3.13 cannot install the Iceberg jar's package (requirements.txt's marker), so a venv
# without the jar gets ICECORE_ICEBERG_JAR from .venv's (the Java-backed tests then run there too).
set -uo pipefail
cd "$(dirname "$0")/.."

versions=("$@")
((${#versions[@]})) || versions=(3.12 3.13)
markers=${QUICK_MARKERS:-not spark and not slow}
logs=test-artifacts/pythons

# The newest pyenv VERSION.x, else pythonVERSION on PATH; nothing when neither exists.
find_python() {
  local version=$1 root=${PYENV_ROOT:-$HOME/.pyenv} best
  best=$(find "$root/versions" -mindepth 1 -maxdepth 1 -name "$version.*" 2>/dev/null |
    grep -E "/$version\.[0-9]+$" | sort -V | tail -n 1)
  if [ -n "$best" ] && [ -x "$best/bin/python" ]; then
    echo "$best/bin/python"
  else
    command -v "python$version" 2>/dev/null || true
  fi
}

# The Iceberg jar that .venv (Python 3.11) installed, for venvs that cannot install it.
jar=${ICECORE_ICEBERG_JAR:-}
if [ -z "$jar" ] && [ -x .venv/bin/python ]; then
  jar=$(.venv/bin/python -c 'from pipeline.spark import find_iceberg_jar; print(find_iceberg_jar())' \
    2>/dev/null || true)
fi

# One Python: (re)make its venv when the requirements are newer, then run the quick tests.
run_one() {
  local version=$1 python=$2 venv=.venv${1//./} started tmp status
  started=$SECONDS
  if ! { [ -f "$venv/.dev" ] && [ "$venv/.dev" -nt requirements.txt ] &&
    [ "$venv/.dev" -nt requirements-dev.txt ]; }; then
    rm -rf "$venv"
    "$python" -m venv "$venv" &&
      "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
        -r requirements-dev.txt &&
      touch "$venv/.dev" || {
      echo "Python $version: installing the pinned requirements into $venv failed."
      return 1
    }
  fi
  echo "Python $version: $venv ready in $((SECONDS - started)) s"
  local env=()
  if [ -n "$jar" ] && ! "$venv/bin/python" -c \
    'from pipeline.spark import find_iceberg_jar; find_iceberg_jar()' 2>/dev/null; then
    env+=("ICECORE_ICEBERG_JAR=$jar")
  fi
  tmp=$(mktemp -d "${TMPDIR:-/tmp}/icecore-python$version-XXXXXX")
  chmod 755 "$tmp" # the PostgreSQL tests' server runs as the postgres user, inside it
  started=$SECONDS
  # shellcheck disable=SC2086 # PYTEST_ARGS is a list of arguments, as in the Makefile
  env "${env[@]}" TMPDIR="$tmp" PATH="$PWD/$venv/bin:$PATH" \
    "$venv/bin/python" -m pytest -p no:cacheprovider -m "$markers" ${PYTEST_ARGS:-}
  status=$?
  rm -rf "$tmp"
  echo "Python $version: quick tests exited $status after $((SECONDS - started)) s"
  return $status
}

pids=()
ran=()
for version in "${versions[@]}"; do
  python=$(find_python "$version")
  if [ -z "$python" ]; then
    echo "Python $version: not found (no $version.x in pyenv, no python$version on PATH); skipped."
    continue
  fi
  echo "Python $version: $python, output in $logs/$version.log"
  mkdir -p "$logs"
  run_one "$version" "$python" >"$logs/$version.log" 2>&1 &
  pids+=($!)
  ran+=("$version")
done

failed=()
for i in "${!pids[@]}"; do
  wait "${pids[$i]}" || failed+=("${ran[$i]}")
done
for version in "${ran[@]}"; do
  echo "=== Python $version ==="
  cat "$logs/$version.log"
done
if ((${#failed[@]})); then
  echo "The quick tests failed on Python ${failed[*]}." >&2
  exit 1
fi
((${#ran[@]})) || echo "No other Python found: nothing run (pyenv install 3.12 3.13 to run them)."
