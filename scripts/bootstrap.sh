#!/usr/bin/env bash
# Install everything browserq needs on a fresh machine: a system Chromium, its headless shell
# (BROWSERQ_BROWSER=headless-shell) and Xvfb (apt, when missing and possible), a virtualenv in .venv with browserq and its dev dependencies (the patched
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

# Debian packages, installed with apt when missing and possible (root, apt-get); the package
# lists are fetched once. Returns non-zero where apt cannot be used.
APT_UPDATED=0
apt_install() {
  command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ] || return 1
  echo "==> installing Debian's $1"
  [ "$APT_UPDATED" = 1 ] || { apt-get update -qq; APT_UPDATED=1; }
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

if ! have_chromium; then
  if ! apt_install chromium; then
    echo "==> no system Chromium found; will use Playwright's build (playwright install chromium)"
    NEED_PLAYWRIGHT_BROWSER=1
  fi
fi

# The headless shell: the lighter engine (BROWSERQ_BROWSER=headless-shell, docs/browsers.md).
have_headless_shell() {
  for c in "${BROWSERQ_HEADLESS_SHELL_PATH:-}" /usr/lib/chromium/chromium-headless-shell /usr/bin/chromium-headless-shell; do
    [ -n "$c" ] && [ -x "$c" ] && return 0
  done
  return 1
}
if ! have_headless_shell; then
  if ! apt_install chromium-headless-shell; then
    echo "==> no system headless shell; BROWSERQ_BROWSER=headless-shell will use Playwright's"
    NEED_PLAYWRIGHT_SHELL=1
  fi
fi

# Xvfb: the virtual display of headful mode (BROWSERQ_HEADLESS=false without DISPLAY).
if ! command -v Xvfb >/dev/null 2>&1; then
  apt_install xvfb --no-install-recommends \
    || echo "==> no Xvfb: headful mode needs a DISPLAY (its tests are skipped)"
fi

# libfaketime: the clock-skew chaos tests run a worker whose clock is minutes off.
if [ ! -e /usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1 ]; then
  apt_install faketime --no-install-recommends \
    || echo "==> no libfaketime: the clock-skew chaos tests will fail (apt-get install faketime)"
fi

if [ ! -x .venv/bin/python ]; then
  echo "==> creating .venv"
  "$PYTHON" -m venv .venv
fi
echo "==> installing browserq and its dependencies into .venv"
# Against constraints.txt: the tested environment is the pinned one (a new release on PyPI
# changes nothing until constraints.txt is regenerated and tested). With uv when it can be had
# (the same packages as pip, resolved and installed in ~8 s instead of ~36 s on a 2-core machine:
# a tenth of CI's set-up), with pip otherwise.
.venv/bin/python -m pip install -q uv >/dev/null 2>&1 || true
if ! { .venv/bin/python -m uv --version >/dev/null 2>&1 \
       && .venv/bin/python -m uv pip install -q --python .venv/bin/python -e '.[dev]' -c constraints.txt; }; then
  echo "==> uv unavailable or failed: installing with pip"
  .venv/bin/python -m pip install -q --upgrade pip >/dev/null
  .venv/bin/python -m pip install -q -e '.[dev]' -c constraints.txt
fi

if [ "${NEED_PLAYWRIGHT_BROWSER:-0}" = 1 ]; then
  .venv/bin/python -m playwright install chromium
fi
if [ "${NEED_PLAYWRIGHT_SHELL:-0}" = 1 ]; then
  .venv/bin/python -m playwright install chromium-headless-shell \
    || echo "==> could not download the headless shell: its tests are skipped"
fi
echo "==> ready: $(.venv/bin/browserq --help >/dev/null && echo browserq CLI ok)"
