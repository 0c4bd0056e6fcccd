#!/usr/bin/env bash
# Set up and run the whole test-suite (slow end-to-end and chaos tests included) against real
# Chromium, PostgreSQL, Redis and RabbitMQ. Extra arguments go to pytest, e.g. -m "not slow".
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/bootstrap.sh
./scripts/services.sh
echo "==> migrating the PostgreSQL 'test' database"
BROWSERQ_DATABASE_URL=postgresql+psycopg://postgres@127.0.0.1:5432/test .venv/bin/browserq db upgrade
echo "==> ruff"
.venv/bin/ruff check browserq tests bench scripts
echo "==> mypy"
.venv/bin/mypy
echo "==> running tests"
exec .venv/bin/python -m pytest "$@"
