#!/usr/bin/env bash
# Set up and run the whole test-suite (slow end-to-end and chaos tests included) against real
# Chromium, PostgreSQL, Redis and RabbitMQ, in parallel xdist workers (TEST_WORKERS, default 4).
# Extra arguments go to pytest after ours, e.g. -m "not slow", or -n 0 to run serially.
# docs/testing.md: how the workers are kept apart.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/bootstrap.sh
./scripts/services.sh
echo "==> migrating the PostgreSQL 'test' database"
BROWSERQ_DATABASE_URL=postgresql+psycopg://postgres@127.0.0.1:5432/test .venv/bin/browserq db upgrade
echo "==> ruff"
.venv/bin/ruff check browserq tests bench scripts
echo "==> mypy"
# Its cache outside the checkout, as pip's and uv's are: a fresh clone checked again reuses what
# did not change (mypy compares each module's hash): ~18 s cold, under 1 s warm on 2 cores.
export MYPY_CACHE_DIR=${MYPY_CACHE_DIR:-${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/browserq/mypy}
mkdir -p "$MYPY_CACHE_DIR" 2>/dev/null && [ -w "$MYPY_CACHE_DIR" ] || MYPY_CACHE_DIR=.mypy_cache
.venv/bin/mypy
# Bytecode caches: the suite starts hundreds of Python processes (workers, CLI commands, nested
# suites) that import browserq, and each xdist worker rewrites every test module's asserts. With
# PYTHONDONTWRITEBYTECODE set (as some shells and images do) each of them compiled all of it again:
# collecting alone cost 11 CPU-s a worker instead of 4. So write the caches, and compile once now.
unset PYTHONDONTWRITEBYTECODE
.venv/bin/python -m compileall -q -j 0 browserq tests >/dev/null
WORKERS=${TEST_WORKERS:-4}
echo "==> running tests ($WORKERS parallel workers; -n 0 runs them serially)"
exec .venv/bin/python -m pytest -n "$WORKERS" --dist worksteal "$@"
