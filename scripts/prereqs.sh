#!/usr/bin/env bash
# Checks the system prerequisites that pip can't install and says exactly what to install.
# Usage: scripts/prereqs.sh [python] [java]
set -u
missing=()
hints=()
for what in "$@"; do
  case "$what" in
    python)
      py=${PYTHON:-python3.11}
      if ! command -v "$py" >/dev/null 2>&1; then
        missing+=("Python 3.11 ($py not found)")
        hints+=("apt-get install python3.11 python3.11-venv  (or pyenv install 3.11)")
      elif ! "$py" -c 'import venv, ensurepip' >/dev/null 2>&1; then
        missing+=("the venv module of $py")
        hints+=("apt-get install python3.11-venv")
      fi
      ;;
    java)
      if [ -n "${JAVA_HOME:-}" ] && [ -x "$JAVA_HOME/bin/java" ]; then
        java_bin="$JAVA_HOME/bin/java"
      else
        java_bin=$(command -v java 2>/dev/null || true)
      fi
      if [ -z "$java_bin" ]; then
        missing+=("Java 17 (java not found on PATH or in JAVA_HOME)")
        hints+=("apt-get install openjdk-17-jre-headless")
      fi
      jar=${ICECORE_SQLITE_JDBC_JAR:-/usr/share/java/sqlite-jdbc.jar}
      if [ ! -f "$jar" ]; then
        missing+=("the SQLite JDBC driver ($jar)")
        hints+=("apt-get install libxerial-sqlite-jdbc-java")
      fi
      ;;
  esac
done
if ((${#missing[@]})); then
  {
    echo "Missing prerequisites: $(IFS=';'; echo "${missing[*]}" | sed 's/;/, /g')."
    echo "Install them with:"
    printf '  %s\n' "${hints[@]}"
  } >&2
  exit 1
fi
