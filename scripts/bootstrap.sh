#!/usr/bin/env bash
# Install everything browserq needs on a fresh machine: a system Chromium and Xvfb (apt, when
# missing and possible), a virtualenv in .venv with browserq and its dev dependencies (the patched
# drivers included). Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}

have_chromium() {
  for c in "${BROWSERQ_CHROMIUM_PATH:-}" /usr/bin/chromium /usr/bin/chromium-browser /usr/bin/google-chrome; do
    [ -n "$c" ] && [ -x "$c" ] && return 0
  done
  return 1
}

if ! have_chromium; then
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    echo "==> installing Debian's chromium"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  else
    echo "==> no system Chromium found; will use Playwright's build (playwright install chromium)"
    NEED_PLAYWRIGHT_BROWSER=1
  fi
fi

# Xvfb: the virtual display of headful mode (BROWSERQ_HEADLESS=false without DISPLAY).
if ! command -v Xvfb >/dev/null 2>&1; then
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    echo "==> installing Debian's xvfb"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends xvfb >/dev/null
  else
    echo "==> no Xvfb: headful mode needs a DISPLAY (its tests are skipped)"
  fi
fi

# libfaketime: the clock-skew chaos tests run a worker whose clock is minutes off.
if [ ! -e /usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1 ]; then
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    echo "==> installing Debian's faketime"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends faketime >/dev/null
  else
    echo "==> no libfaketime: the clock-skew chaos tests will fail (apt-get install faketime)"
  fi
fi

if [ ! -x .venv/bin/python ]; then
  echo "==> creating .venv"
  "$PYTHON" -m venv .venv
fi
echo "==> installing browserq and its dependencies into .venv"
.venv/bin/python -m pip install -q --upgrade pip >/dev/null
.venv/bin/python -m pip install -q -e '.[dev]'

if [ "${NEED_PLAYWRIGHT_BROWSER:-0}" = 1 ]; then
  .venv/bin/python -m playwright install chromium
fi
echo "==> ready: $(.venv/bin/browserq --help >/dev/null && echo browserq CLI ok)"
