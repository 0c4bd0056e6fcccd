"""One settings object for the whole service.

Values come from, in order of precedence: explicit keyword arguments, ``BROWSERQ_*`` environment
variables, a settings file (``BROWSERQ_SETTINGS_FILE``, YAML or TOML) and the defaults below.
Nothing is read at import time: call :func:`get_settings` (cached) or build a :class:`Settings`.
Unknown keys in the settings file are rejected, so a typo never silently falls back to a default.
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BeforeValidator,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_settings import BaseSettings, NoDecode, PydanticBaseSettingsSource, SettingsConfigDict

from browserq.drivers import usable_driver
from browserq.engines import check_mode, resolve, usable_engine
from browserq.errors import ConfigError
from browserq.limit_specs import DEFAULT_REDIS_URL, parse_caps, parse_rate_map
from browserq.settings_file import SettingsFileSource
from browserq.webhooks.egress import AllowedHosts, AllowedNetworks
from browserq.webhooks.targets import notify_egress_problem, notify_url_problem

#: Flags Chromium needs on locked-down hosts (root in a container) and on closed networks.
CHROMIUM_BASE_ARGS: tuple[str, ...] = (
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
    "--disable-dev-shm-usage",
)

class Settings(BaseSettings):
    """Every knob of browserq. The environment variable of a field is ``BROWSERQ_`` + its name."""

    model_config = SettingsConfigDict(env_prefix="BROWSERQ_", extra="forbid", validate_default=True)

    # --- where things live -------------------------------------------------------------------
    broker_url: str = Field("redis://127.0.0.1:6379/0", description="Celery broker (Redis or RabbitMQ).")
    result_backend: str | None = Field(
        None, description="Celery result backend; default: the database (db+DATABASE_URL)."
    )
    database_url: str = Field(
        "sqlite:///browserq.db", description="SQLAlchemy URL of the run store (PostgreSQL in production)."
    )
    templates_dir: Path = Field(Path("templates"), description="Directory of YAML templates.")
    artifacts_dir: Path = Field(Path("artifacts"), description="Where screenshots, snapshots and traces go.")
    queue: str = Field("browserq", description="Celery queue the run tasks are sent to.")
    broker_heartbeat_s: float = Field(10.0, ge=4, le=60, description="Heartbeat of broker and Redis result-backend connections: one that stays silent (a lost NAT flow, a frozen host) is dropped and reconnected within 3× this.")

    # --- browser -----------------------------------------------------------------------------
    browser: Annotated[str, AfterValidator(usable_engine)] = Field("chromium", description="The browser engine: chromium (the full browser; stealth is made for it) or headless-shell (chrome-headless-shell: lighter, headless only, with stealth tells; docs/browsers.md).")
    chromium_path: str | None = Field(None, description="Chromium/Chrome executable; autodetected, then Playwright's own build.")
    headless_shell_path: str | None = Field(None, description="chrome-headless-shell executable (BROWSERQ_BROWSER=headless-shell); autodetected, then Playwright's download.")
    headless: bool = Field(True, description="Run Chromium headless; false: headful, on $DISPLAY or, without one, on an Xvfb display browserq starts.")
    driver: Annotated[str, AfterValidator(usable_driver)] = Field("playwright", description="The Playwright driver: playwright, rebrowser or patchright (the last two are extras: pip install 'browserq[rebrowser]'); read from the environment, before any setting loads.")
    chromium_args: list[str] = Field(default_factory=list, description="Extra Chromium flags (feature lists are merged with Playwright's and browserq's).")
    no_sandbox: bool | None = Field(None, description="Pass --no-sandbox; default: only when running as root.")

    stealth: bool = Field(True, description="Give every context a coherent, non-headless identity (browserq.stealth).")
    context_prewarm: int = Field(1, ge=0, le=8, description="Spare contexts each worker keeps pre-warmed for the next runs.")
    browser_max_contexts: int = Field(
        500, ge=0, description="Recycle the browser after this many contexts (0 = never)."
    )
    browser_max_age_s: float = Field(3600.0, ge=0, description="Recycle the browser after this long (0 = never).")
    browser_max_rss_mb: float = Field(
        1536.0, ge=0, description="Recycle the browser when its process tree's RSS passes this (0 = never)."
    )
    driver_max_browsers: int = Field(1, ge=0, description="Replace the Playwright driver (a node process that grows over its life) after it has launched this many browsers; the old one stops when its last browser closes (0 = never).")

    # --- limits and policies -----------------------------------------------------------------
    step_retries: int = Field(2, ge=0, le=10, description="Retries in place of a retryable step failure.")
    step_retry_delay_s: float = Field(0.25, ge=0, description="First delay between step retries.")
    max_selector_length: int = Field(1000, ge=10, description="Longest selector a template may use.")
    max_repeat: int = Field(1000, ge=1, description="Upper bound any repeat may declare.")
    max_params_bytes: int = Field(
        1 << 20, ge=1024, description="Largest params of one run, as JSON bytes (checked at the producer)."
    )
    snapshot_console_lines: int = Field(50, ge=0, description="Console messages kept in a failure snapshot.")
    snapshot_network_entries: int = Field(50, ge=0, description="Requests kept in a failure snapshot.")
    max_step_output_bytes: int = Field(
        10 * 1024 * 1024, ge=1024,
        description="Largest result one step may return (JSON bytes); larger fails OUTPUT_TOO_LARGE.",
    )
    max_run_output_bytes: int = Field(
        25 * 1024 * 1024, ge=1024,
        description="Largest total of a run's outputs (JSON bytes); a step that would pass it fails OUTPUT_TOO_LARGE.",
    )
    max_download_bytes: int = Field(100 * 1024 * 1024, ge=1, description="Largest file one download step may store; larger fails DOWNLOAD_TOO_LARGE.")
    max_run_download_bytes: int = Field(500 * 1024 * 1024, ge=1, description="Largest total one run attempt may download; a download past it fails DOWNLOAD_TOO_LARGE.")
    max_run_artifact_bytes: int = Field(1024 * 1024 * 1024, ge=1024, description="Largest total of the artifacts one run stores (screenshots, downloads, snapshots, traces; earlier attempts too); a step's artifact past it fails ARTIFACTS_TOO_LARGE, failure evidence past it is skipped with a warning.")
    max_file_param_bytes: int = Field(25 * 1024 * 1024, ge=1, description="Largest file a `file` param may pass (checked at the producer, ParamError), or an upload step may read from BROWSERQ_UPLOADS_DIR.")
    uploads_dir: Path | None = Field(None, description="Directory upload steps read `file: {path: ...}` from, on the worker (unset: none).")
    run_time_limit_margin_s: int = Field(
        30, ge=5, description="Celery soft limit = template run timeout + this margin."
    )
    db_statement_timeout_s: float = Field(10.0, ge=0, description="PostgreSQL statement_timeout of the run store; a connection silent 5 s longer is dropped and the transaction retried (0: no limit). Keep it + 5 s below two thirds of BROWSERQ_LEASE_TTL_S: a lease renewal stalled on a dead connection is then retried before the lease runs out.")
    db_lock_timeout_s: float = Field(5.0, ge=0, description="PostgreSQL lock_timeout: a row lock not granted in time fails the transaction, which is retried (0: no limit).")
    db_idle_in_transaction_timeout_s: float = Field(30.0, ge=0, description="PostgreSQL idle_in_transaction_session_timeout: the server ends a session whose client went silent mid-transaction, freeing its locks (0: no limit).")
    lease_ttl_s: float = Field(
        30.0, ge=1, description="A running run's lease lasts this long; renewed every third of it."
    )
    session_max_per_process: int = Field(25, ge=1, le=1000, description="Agent sessions one worker process holds at most (an idle one holds a browser context and no Celery slot); one more is refused SESSION_CAPACITY.")
    session_max_per_fleet: int = Field(0, ge=0, description="Agent sessions open (queued or running) in the whole fleet at most; open_session() past it raises SessionCapacity (0: no fleet cap).")
    session_idle_timeout_s: float = Field(300.0, gt=0, le=86_400, description="A session with no command for this long is closed (recorded SESSION_IDLE); open_session(idle_timeout_s=) may ask for less.")
    session_max_lifetime_s: float = Field(3600.0, gt=0, le=86_400, description="A session is closed this long after it opened, busy or not (recorded SESSION_LIFETIME); open_session(max_lifetime_s=) may ask for less.")
    session_open_timeout_s: float = Field(60.0, gt=0, description="How long open_session() waits for a worker process to take the session before it gives up with SessionCapacity (the run is cancelled).")
    session_capacity_retry_s: float = Field(5.0, gt=0, description="The retry_after_s a SessionCapacity suggests.")
    session_side_effect_actions: list[str] = Field(default_factory=list, description="Actions whose session commands are always side effects (written ahead before dispatch, never replayed), as if sent with side_effect=True; e.g. [\"click\", \"press\"].")
    mcp_token: str | None = Field(None, description="The bearer token `browserq mcp --http` requires of every request (docs/agents.md); its sessions run under no tenant.")
    mcp_tokens: dict[str, str] = Field(default_factory=dict, description='More bearer tokens for `browserq mcp --http`, each mapped to the tenant its sessions run under (tenant caps apply), JSON {"TOKEN": "acme"}.')
    journal_flush_ms: int = Field(
        1000, ge=0, le=60_000,
        description="Hold back step and artifact records that need not be durable at once and write them "
        "together at most this often (and at every checkpoint, side effect and run end); a SIGKILL loses at "
        "most this much recorded progress, redone on resume. 0 = every record at once.",
    )
    checkpoint_interval_ms: int = Field(
        5000, ge=0, le=3_600_000,
        description="At most one automatic checkpoint (checkpoints: auto, a step that landed on a new page) per "
        "this interval; side effects and checkpoint: true are always checkpointed. A crash redoes at most this "
        "much read-only work on resume. 0 = after every step that lands on a new page.",
    )
    max_worker_losses: int = Field(
        3, ge=0, description="Takeovers after dead workers before a run fails as poison."
    )
    run_retries: int = Field(2, ge=0, le=20, description="Retries of a whole run for run-level errors.")
    run_retry_backoff_s: float = Field(5.0, ge=0, description="First run-level retry delay (exponential, jittered).")
    run_retry_backoff_max_s: float = Field(300.0, ge=0, description="Longest run-level retry delay.")
    requeue_after_s: float = Field(
        600.0, ge=1, description="The sweeper re-sends a queued run whose message may be lost after this."
    )
    sweep_interval_s: float = Field(
        30.0, ge=1, description="How often the sweeper runs (inside the workers, and from beat)."
    )
    retention_s: float | None = Field(
        None, gt=0,
        description="Delete finished runs (completed, failed, cancelled) this long after they finished, "
        "with their rows, artifacts and task results; the sweeper does it in bounded batches "
        "(unset: keep forever).",
    )
    sweep_in_workers: bool = Field(
        True,
        description="Workers run the sweeper too, one process at a time across the fleet (a database lock).",
    )
    secret_key: str | None = Field(
        None, description="Fernet key that encrypts secret params stored with a run (browserq keygen)."
    )
    auto_migrate: bool = Field(True, description="Upgrade the database schema when a worker or CLI starts.")
    log_level: str = Field("INFO", description="Log level of browserq's structured logs.")
    log_format: Literal["console", "json"] = Field("console", description="Log rendering.")
    step_log_level: str = Field(
        "INFO", description="Level of the one log line per finished step attempt (DEBUG hides them at INFO)."
    )

    # --- operating (browserq.operate: progress, schedules, metrics, readiness) ---------------
    artifacts_url: str | None = Field(
        None,
        description="Where artifacts go: a directory, file:///path or s3://bucket/prefix (default: artifacts_dir).",
    )
    s3_endpoint_url: str | None = Field(
        None, description="Endpoint of an S3-compatible store (MinIO, Ceph, ...); credentials: the AWS_* variables."
    )
    progress_interval_ms: int = Field(
        500, ge=0, description="Least time between two progress updates of a run in the result backend (0 = every step)."
    )
    schedules_file: Path | None = Field(
        None, description="YAML file of scheduled template runs, loaded by browserq beat."
    )
    beat_lock_ttl_s: float = Field(
        30.0, gt=0, description="A beat that stops renewing its fleet-wide lock loses it after this long."
    )
    metrics_port: int | None = Field(
        None, ge=0, le=65535, description="Port each worker serves Prometheus metrics on (unset = no metrics)."
    )
    metrics_host: str = Field("127.0.0.1", min_length=1, description="Interface the metrics port listens on "
                              "(0.0.0.0: scraped from another host or container).")
    metrics_dir: Path | None = Field(
        None, description="prometheus_client multiprocess directory (default: a fresh one per worker)."
    )
    ready_file: Path | None = Field(
        None, description="File a worker creates once its browsers are warm and removes on shutdown (healthchecks)."
    )

    # --- a person in the loop (browserq.live, browserq.webhooks) ------------------------------
    live_view_host: str = Field(
        "127.0.0.1", description="Interface a worker's live view listens on (0.0.0.0 only behind a proxy you trust)."
    )
    live_view_port: int = Field(
        0, ge=0, le=65535,
        description="First port of a worker's live views: each worker process takes the next free one of 32 (0 = any free port).",
    )
    live_view_public_url: str | None = Field(
        None, description="Base URL people open the live view at, e.g. https://live.example.com/{port} (default: http://HOST:PORT)."
    )
    live_view_while_running: bool = Field(
        False, description="Serve the live view of every running run too (view only; browserq live RUN_ID)."
    )
    live_token_ttl_s: float = Field(
        900.0, gt=0, le=86400, description="How long a one-time live-view link stays valid."
    )
    max_human_wait_s: float = Field(
        3600.0, gt=0, le=5 * 3600,
        description="The longest a template's handoffs may wait in all (its handoff budget is refused above it; "
        "at most 5 h, under Redis' 6 h visibility timeout).",
    )
    notify_url: str | None = Field(None, description="Webhook URL for every run's events without a notify URL of its own.")
    webhook_secret: str | None = Field(
        None, description="Shared secret that signs every webhook (HMAC-SHA256); required once any notify URL is set."
    )
    webhook_timeout_s: float = Field(10.0, gt=0, le=120, description="How long one webhook POST may take in all.")
    webhook_threads: int = Field(4, ge=0, le=64, description="First webhook POSTs a worker process makes at once.")
    webhook_allowed_hosts: AllowedHosts = Field((), description="Hosts (or *.domain) webhooks may reach at any address.")
    webhook_allowed_networks: AllowedNetworks = Field((), description="CIDRs webhooks may reach besides public ones.")
    webhook_max_attempts: int = Field(8, ge=1, le=30, description="POSTs of one event before it is given up.")

    # --- proxies (browserq.proxies) ----------------------------------------------------------
    # A string is split on commas/newlines by browserq.proxies.config; a JSON list arrives as a list.
    proxies: str | list[str] = Field(
        default_factory=list,
        description="Proxy URLs (http, https, socks5; user:pass@; #region=xx): a JSON list or comma/newline-separated.",
    )
    proxies_file: Path | None = Field(None, description="File of proxy URLs, one per line; # starts a comment.")
    proxy_strategy: Literal["round_robin", "random", "least_used", "sticky_domain", "sticky_identity"] = Field(
        "round_robin", description="How a run's proxy is chosen."
    )
    proxy_cooldown_s: float = Field(30.0, gt=0, description="First cooldown of a failing proxy (doubles per failure).")
    proxy_cooldown_max_s: float = Field(900.0, gt=0, description="Longest cooldown of a failing proxy.")
    proxy_redis_url: str | None = Field(
        None, description="Redis for shared proxy health; default: the broker if redis://, else redis://127.0.0.1:6379/0."
    )
    proxy_sticky_ttl_s: float = Field(
        86400.0, ge=1, description="A sticky domain/identity -> proxy assignment is forgotten after this idle time."
    )

    # --- fleet-wide limits (browserq.limits) ---------------------------------------------------
    limits_redis_url: str | None = Field(
        None, description="Redis holding rate limits and tenant slots; default: the broker if Redis."
    )
    rate_limits: Annotated[dict[str, str], NoDecode, BeforeValidator(parse_rate_map)] = Field(
        default_factory=dict,
        description='Per-domain request rates, JSON {"example.com": "2/s", "*": "10/s"} or "host=rate; ...".',
    )
    tenant_caps: Annotated[dict[str, int], NoDecode, BeforeValidator(parse_caps)] = Field(
        default_factory=dict, description='Concurrent runs per tenant, JSON {"acme": 2, "*": 5} or "acme=2; *=5".'
    )
    tenant_slot_ttl_s: float = Field(30.0, ge=1, description="A dead worker's tenant slot frees itself after this.")
    tenant_wait_s: float = Field(60.0, ge=0, description="How long a run waits for a tenant slot (then TenantBusy).")

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return init_settings, env_settings, SettingsFileSource(settings_cls)

    @field_validator("broker_url", "database_url")
    @classmethod
    def _not_empty(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be empty")
        return value

    @field_validator("notify_url")
    @classmethod
    def _notify_url_form(cls, value: str | None) -> str | None:
        if value is None or not value.strip():
            return None
        if problem := notify_url_problem(value):
            raise ValueError(problem)
        return value

    @model_validator(mode="after")
    def _signed_webhooks(self) -> Settings:
        if self.notify_url and (problem := notify_egress_problem(self.notify_url, self)):
            raise ValueError(f"BROWSERQ_NOTIFY_URL: {problem}")
        if self.notify_url and not self.webhook_secret:
            raise ValueError(
                "BROWSERQ_NOTIFY_URL is set but BROWSERQ_WEBHOOK_SECRET is not: webhooks are always signed; "
                "set a long random secret (e.g. browserq keygen) and give it to the receiver"
            )
        return self

    @model_validator(mode="after")
    def _engine_mode(self) -> Settings:
        check_mode(self.browser, headless=self.headless)
        return self

    @field_validator("artifacts_url")
    @classmethod
    def _artifacts_url_form(cls, value: str | None) -> str | None:
        """A directory, file:///path or s3://bucket/prefix (checked here, used by artifact_store)."""
        if value is None or not value.strip():
            return None
        from browserq.store.artifact_paths import parse_artifacts_url

        try:
            parse_artifacts_url(value)
        except ConfigError as exc:
            raise ValueError(str(exc)) from None
        return value

    # --- derived values ----------------------------------------------------------------------
    def shared_redis_url(self, explicit: str | None) -> str:
        """The Redis that fleet-wide state (limits, proxy health) lives in: ``explicit`` when set,
        else the broker when it is Redis, else the local default. One rule for every such store."""
        if explicit:
            return explicit
        if self.broker_url.startswith(("redis://", "rediss://", "unix://")):
            return self.broker_url
        return DEFAULT_REDIS_URL

    @property
    def effective_result_backend(self) -> str:
        """The result backend, defaulting to Celery's database backend on the run store."""
        return self.result_backend or f"db+{self.database_url}"

    def resolve_chromium(self) -> str | None:
        """The executable of the chosen engine (``browser``), or None: Playwright's own download
        of it. An explicit path must exist; a missing engine is a ConfigError (browserq.engines)."""
        explicit = self.chromium_path if self.browser == "chromium" else self.headless_shell_path
        return resolve(self.browser, explicit)

    @property
    def chromium_sandbox(self) -> bool:
        """Whether Chromium's sandbox is on: off as root (it cannot start there), on otherwise."""
        return not (self.no_sandbox if self.no_sandbox is not None else _running_as_root())

    def chromium_launch_args(self) -> list[str]:
        """Flags for every launch: closed-network hygiene, sandbox choice, then the user's extras."""
        args = list(CHROMIUM_BASE_ARGS)
        if not self.chromium_sandbox:
            args.append("--no-sandbox")
        return args + [a for a in self.chromium_args if a not in args]


def _running_as_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


def load_settings(**overrides: Any) -> Settings:
    """Build settings, turning pydantic's validation errors into one readable ConfigError."""
    try:
        return Settings(**overrides)
    except ValidationError as exc:
        problems = "; ".join(
            # a whole-model check (no field) names its settings in its message
            f"BROWSERQ_{'.'.join(str(p) for p in err['loc']).upper()}: {err['msg']}" if err["loc"] else err["msg"]
            for err in exc.errors()
        )
        raise ConfigError(f"invalid settings: {problems}") from None


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process-wide settings, read once on first use."""
    return load_settings()


def reset_settings_cache() -> None:
    """Forget cached settings (tests and the CLI's ``--settings`` option use this)."""
    get_settings.cache_clear()
