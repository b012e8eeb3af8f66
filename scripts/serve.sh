#!/usr/bin/env bash
# The app's single entry point, shared by `make run` and the Docker image: build the demo
# warehouse on first start (a finished one is kept), then serve the app.
#   ICECORE_CATALOG  serve this catalog instead of the demo (then nothing is built)
#   ICECORE_ADDRESS  listen address (127.0.0.1; the Docker image sets 0.0.0.0)
#   ICECORE_PORT     port (8501)
#   ICECORE_DEV=1    development: Streamlit watches the source files and reruns on save, and
#                    logs at info (otherwise .streamlit/config.toml: no file watching, so a
#                    job writing thousands of files under ./warehouse costs nothing; warnings
#                    only)
#   ICECORE_LOG_FILE also write the server's log to this file, bounded: it is rotated at
#                    ICECORE_LOG_MAX_BYTES (10 MiB) with one previous file kept (FILE.1)
# What the app serves is ICECORE_CATALOG and the [catalogs.NAME] entries of icecore.toml and
# nothing else, unless ICECORE_OPEN_CATALOGS=1 (which `make run` sets; the Docker image does
# not). See README.md "Deploying" and SECURITY.md.
# With [auth] in icecore.toml (ICECORE_CONFIG names another file) every page needs a signed-in
# user: Streamlit's auth secrets are generated here at each start from [auth] and the
# environment (python -m icecore.launch); a missing client secret is one sentence and exit 1.
set -euo pipefail
cd "$(dirname "$0")/.."
auth=()
auth_args="$(python -m icecore.launch --address "${ICECORE_ADDRESS:-127.0.0.1}" \
  --port "${ICECORE_PORT:-8501}")"
if [ -n "$auth_args" ]; then
  mapfile -t auth <<< "$auth_args"
fi
if [ -z "${ICECORE_CATALOG:-}" ]; then
  python -m pipeline.demo --warehouse warehouse
fi
dev=()
if [ "${ICECORE_DEV:-}" = "1" ]; then
  dev=(--server.fileWatcherType auto --server.runOnSave true --logger.level info)
fi
echo "Serving Icecore at http://${ICECORE_ADDRESS:-127.0.0.1}:${ICECORE_PORT:-8501}" >&2
serve=(python -m streamlit run app.py
  --server.address "${ICECORE_ADDRESS:-127.0.0.1}" --server.port "${ICECORE_PORT:-8501}"
  "${dev[@]}" "${auth[@]}" "$@")
if [ -z "${ICECORE_LOG_FILE:-}" ]; then
  exec "${serve[@]}"
fi
exec "${serve[@]}" > >(exec python scripts/bounded_log.py "$ICECORE_LOG_FILE" \
  "${ICECORE_LOG_MAX_BYTES:-10485760}") 2>&1
