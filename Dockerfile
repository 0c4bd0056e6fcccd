# syntax=docker/dockerfile:1
#
# browserq: one image for every role (worker, beat, flower, migrations, CLI).
#   docker build -t browserq .
#   docker run --rm --init --shm-size=1g --env-file .env browserq worker
# docker-compose.yml in this folder runs the whole stack.

FROM python:3.11-slim-bookworm

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

# Debian's Chromium (kept current by bookworm-security) instead of Playwright's downloaded build:
# it is patched by apt and needs no download at build time. Fonts so pages and screenshots
# render text; ca-certificates for HTTPS sites.
RUN apt-get update \
    && apt-get install -y --no-install-recommends \
        chromium \
        fonts-liberation \
        fonts-noto-color-emoji \
        ca-certificates \
    && rm -rf /var/lib/apt/lists/*

# An unprivileged user: a compromised renderer gets no root in the container, and browserq does
# not add --no-sandbox by itself (it only does as root). Chromium's own sandbox also needs user
# namespaces, which Docker's default seccomp profile blocks: see BROWSERQ_NO_SANDBOX in
# docker-compose.yml. Chromium writes its profile and crash data under $HOME.
RUN groupadd --system --gid 10001 browserq \
    && useradd --system --uid 10001 --gid browserq --create-home --home-dir /home/browserq \
        --shell /usr/sbin/nologin browserq \
    && mkdir -p /app /data/artifacts \
    && chown browserq:browserq /data/artifacts

# Install from a scratch copy of the source, then delete it: /app must not hold a second
# browserq/ tree, since `python -m celery` puts the working directory first on sys.path and would
# import that instead of the installed package. (pyproject.toml names README.md as the readme,
# and the wheel bundles alembic/ and templates/ as browserq/_migrations and browserq/_templates.)
COPY pyproject.toml README.md /tmp/src/
COPY alembic /tmp/src/alembic
COPY templates /tmp/src/templates
COPY browserq /tmp/src/browserq
RUN pip install "/tmp/src[flower]" \
    && rm -rf /tmp/src \
    && chromium --version

# Templates last: editing one does not reinstall the package.
WORKDIR /app
COPY templates ./templates

ENV BROWSERQ_CHROMIUM_PATH=/usr/bin/chromium \
    BROWSERQ_TEMPLATES_DIR=/app/templates \
    BROWSERQ_ARTIFACTS_DIR=/data/artifacts

USER browserq

# Flower's port (only used by the flower service).
EXPOSE 5555

# Worker liveness: the worker on this container must answer a broker ping. Celery names a worker
# celery@<hostname> and Docker sets HOSTNAME to the container's hostname. Other roles (beat,
# flower, migrate) override or disable this in docker-compose.yml.
HEALTHCHECK --interval=60s --timeout=30s --start-period=60s --retries=3 \
    CMD celery -A browserq.celery_app inspect ping --timeout 10 -d "celery@${HOSTNAME}" > /dev/null || exit 1

# Celery's warm shutdown on SIGTERM lets running steps finish; give it time (stop_grace_period).
STOPSIGNAL SIGTERM
ENTRYPOINT ["browserq"]
CMD ["worker"]
