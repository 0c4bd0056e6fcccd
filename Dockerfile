# syntax=docker/dockerfile:1
#
# browserq: one image for every role (worker, beat, flower, migrations, CLI).
#   docker build -t browserq .
#   docker run --rm --init --shm-size=1g --tmpfs /tmp:mode=1777,size=1g \
#       -e BROWSERQ_NO_SANDBOX=true --env-file .env browserq worker
# docker-compose.yml in this folder runs the whole stack (README, "Docker Compose").
#
# Versions are pinned: Python packages by constraints.txt (regenerate it from a tested .venv with
# `.venv/bin/python tests/test_deploy.py > constraints.txt`), Chromium by the Playwright version
# pinned there. tests/test_deploy.py checks this file, docker-compose.yml and constraints.txt.

FROM python:3.11-slim-bookworm

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PLAYWRIGHT_BROWSERS_PATH=/ms-playwright

# An unprivileged user: a compromised renderer gets no root in the container, and browserq does
# not add --no-sandbox by itself (it only does as root). Chromium's own sandbox also needs user
# namespaces, which Docker's default seccomp profile blocks: see BROWSERQ_NO_SANDBOX in
# docker-compose.yml. Chromium writes its profile and crash data under $HOME.
RUN groupadd --system --gid 10001 browserq \
    && useradd --system --uid 10001 --gid browserq --create-home --home-dir /home/browserq \
        --shell /usr/sbin/nologin browserq \
    && mkdir -p /app /data/artifacts \
    && chown browserq:browserq /data/artifacts

# Every runtime dependency at the exact version the test-suite ran with. This layer and the
# browser's below change only when constraints.txt does, not when browserq's code does.
COPY constraints.txt /tmp/constraints.txt
RUN pip install -r /tmp/constraints.txt

# Chromium: the build this Playwright version was made and tested with (Chrome for Testing),
# never Debian's `chromium` package, whose version drifts away from what Playwright's protocol
# expects. --with-deps installs the libraries and fonts it needs through apt. Two engines of that
# build: the full browser (the default, new headless mode) and its headless shell, the lighter
# engine chosen with BROWSERQ_BROWSER=headless-shell (docs/browsers.md, "Engines").
# BROWSERQ_CHROMIUM_PATH and BROWSERQ_HEADLESS_SHELL_PATH name them through stable links: with an
# explicit path browserq does not autodetect (no /usr/bin/chromium exists here anyway), and the
# stealth layer can read the browser's version from `chrome --version` before launching it.
# xvfb: the virtual display of headful mode (BROWSERQ_HEADLESS=false), which closes tells
# headless cannot (stealth/README.md).
RUN python -m playwright install --with-deps chromium chromium-headless-shell \
    && apt-get install -y --no-install-recommends tzdata xvfb \
    && rm -rf /var/lib/apt/lists/* \
    && chmod -R a+rX "$PLAYWRIGHT_BROWSERS_PATH" \
    && mkdir -p /opt/browserq \
    && ln -s "$(python -c 'from playwright.sync_api import sync_playwright as s; p = s().start(); print(p.chromium.executable_path); p.stop()')" \
        /opt/browserq/chrome \
    && ln -s "$(ls -d "$PLAYWRIGHT_BROWSERS_PATH"/chromium_headless_shell-*/chrome-headless-shell-linux64/chrome-headless-shell)" \
        /opt/browserq/headless-shell \
    && /opt/browserq/chrome --version \
    && /opt/browserq/headless-shell --version \
    && test ! -e /usr/bin/chromium

# Install from a scratch copy of the source, then delete it: /app must not hold a second
# browserq/ tree, since `python -m celery` puts the working directory first on sys.path and would
# import that instead of the installed package. (pyproject.toml names README.md as the readme,
# and the wheel bundles alembic/ and templates/ as browserq/_migrations and browserq/_templates.)
# The dependencies are already installed above and -c keeps pip from moving any of them (one
# missing from constraints.txt would come in unpinned: tests/test_deploy.py fails on that);
# `pip check` fails the build if the installed set is inconsistent.
COPY pyproject.toml README.md /tmp/src/
COPY alembic /tmp/src/alembic
COPY templates /tmp/src/templates
COPY browserq /tmp/src/browserq
RUN pip install -c /tmp/constraints.txt "/tmp/src[flower,s3]" \
    && pip check \
    && rm -rf /tmp/src /tmp/constraints.txt

# Templates last: editing one does not reinstall the package.
WORKDIR /app
COPY templates ./templates

ENV BROWSERQ_CHROMIUM_PATH=/opt/browserq/chrome \
    BROWSERQ_HEADLESS_SHELL_PATH=/opt/browserq/headless-shell \
    BROWSERQ_TEMPLATES_DIR=/app/templates \
    BROWSERQ_ARTIFACTS_DIR=/data/artifacts \
    BROWSERQ_READY_FILE=/tmp/browserq-ready

USER browserq

# Flower's port (flower service) and the workers' Prometheus metrics (BROWSERQ_METRICS_PORT, with
# BROWSERQ_METRICS_HOST=0.0.0.0 to be reached from outside the container, as compose sets it).
EXPOSE 5555 9100

# Worker readiness: a worker creates BROWSERQ_READY_FILE once its browsers are warm and removes it
# on shutdown. Keep /tmp on a tmpfs (--tmpfs /tmp; compose does) so a file left by a killed
# worker does not survive into the restarted container. Roles that are not workers (beat,
# flower, migrate) override or disable this in docker-compose.yml.
HEALTHCHECK --interval=15s --timeout=5s --start-period=120s --retries=3 \
    CMD test -f "$BROWSERQ_READY_FILE" || exit 1

# Celery's warm shutdown on SIGTERM lets running steps finish; give it time (stop_grace_period).
STOPSIGNAL SIGTERM
ENTRYPOINT ["browserq"]
CMD ["worker"]
