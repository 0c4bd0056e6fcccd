#!/usr/bin/env bash
# Set up and run the demo: bundled templates against a bundled site on 127.0.0.1, stored in
# ./browserq.db (SQLite), artifacts in ./artifacts. No servers needed.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/bootstrap.sh
exec .venv/bin/browserq demo "$@"
