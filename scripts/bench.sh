#!/usr/bin/env bash
# Reproduce bench/README.md's scaling figures on this machine: install everything (as
# scripts/test.sh does), Crawlee for the comparison, start PostgreSQL/Redis if down, then run
# bench/scaling.py (pages/s, CPU-seconds per 1,000 pages and PSS per slot at K = 1, 2, 4, 8 for
# browserq prefork and threads, the same-flags raw Playwright script and Crawlee) and print the
# tables. Extra arguments go to bench/scaling.py, e.g. --k 1,2 --rounds 1, or --json.
# Takes ~30 min on an idle 2-core machine with the defaults; needs ~5 GB of free memory at K=8.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/bootstrap.sh
./scripts/services.sh
echo "==> installing the bench extra (Crawlee)"
.venv/bin/pip install -q -e '.[bench]'
echo "==> bench/scaling.py $* (load average now: $(cut -d' ' -f1-3 /proc/loadavg); run it on an idle machine)"
exec .venv/bin/python bench/scaling.py "$@"
