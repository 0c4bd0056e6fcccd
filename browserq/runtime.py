"""Everything one process needs to execute runs, behind a synchronous façade.

A :class:`Runtime` owns the event-loop thread, the browser pool, the store and the artifact
directory. Celery workers build one per prefork child (after the fork); the CLI builds one
in-process. Both then call :meth:`Runtime.execute` with a recorded run's id.
"""

from __future__ import annotations

import os
import socket
from typing import Any

import structlog

from browserq.browsers import BrowserPool, EventLoopThread
from browserq.errors import Codes, ConfigError, StoreError, TemplateError
from browserq.redact import mask
from browserq.runner import RunOutcome, RunRequest, StepListener, TemplateRunner
from browserq.runs import PreparedRun, prepare_loaded, prepare_run, record_run
from browserq.secrets import SecretBox
from browserq.settings import Settings, get_settings
from browserq.store import ArtifactDir, RunView, Store
from browserq.templates import LoadedTemplate, TemplateRegistry, load_template_text, secret_names

log = structlog.get_logger(__name__)

TERMINAL_STATUSES = frozenset({"completed", "failed", "cancelled", "needs_review"})
BROWSER_START_TIMEOUT_S = 60.0


def worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


class Runtime:
    def __init__(self, settings: Settings | None = None, *, listener: StepListener | None = None) -> None:
        self.settings = settings or get_settings()
        self.store = Store.from_settings(self.settings)
        self.artifacts = ArtifactDir(self.settings.artifacts_dir)
        self.registry = TemplateRegistry(
            self.settings.templates_dir,
            max_selector_length=self.settings.max_selector_length,
            max_repeat=self.settings.max_repeat,
        )
        self.secret_box = SecretBox(self.settings.secret_key)
        self.loop = EventLoopThread()
        self.pool = BrowserPool(self.settings)
        self.runner = TemplateRunner(self.pool, self.store, self.artifacts, self.settings, listener)
        self._started = False

    # --- lifecycle ---------------------------------------------------------------------------
    def start(self) -> Runtime:
        """Migrate (if enabled), start the loop thread and launch a warmed Chromium."""
        if self._started:
            return self
        if self.settings.auto_migrate:
            self.store.upgrade()
        self.loop.start()
        try:
            self.loop.run(self.pool.start(), timeout=BROWSER_START_TIMEOUT_S)
        except BaseException:
            self.loop.stop()
            raise
        self._started = True
        log.info("runtime started", worker=worker_name(), browser_pid=self.pool.pid)
        return self

    def stop(self) -> None:
        """Close the browser and driver; leaves no Chromium process behind."""
        if self._started:
            try:
                self.loop.run(self.pool.stop(), timeout=30)
            except Exception as exc:  # noqa: BLE001 - shutting down anyway
                log.warning("browser pool stop failed", error=str(exc))
            self._started = False
        self.loop.stop()
        self.store.dispose()

    def __enter__(self) -> Runtime:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- running -----------------------------------------------------------------------------
    def submit_local(self, template_ref: str, params: dict[str, Any] | None = None) -> PreparedRun:
        """Validate and record a run for in-process execution (secrets stay in memory)."""
        prepared = prepare_run(self.registry, template_ref, params)
        record_run(self.store, prepared, secret_box=None)
        return prepared

    def run_local(self, template_ref: str, params: dict[str, Any] | None = None) -> RunOutcome:
        """Validate, record and execute a run in this process (the CLI's embedded mode)."""
        prepared = self.submit_local(template_ref, params)
        return self.execute(prepared.run_id, secrets=prepared.secret_values)

    def run_loaded(self, loaded: LoadedTemplate, params: dict[str, Any] | None = None) -> RunOutcome:
        """Like :meth:`run_local` for a template loaded from text rather than the registry."""
        prepared = prepare_loaded(loaded, params)
        record_run(self.store, prepared, secret_box=None)
        return self.execute(prepared.run_id, secrets=prepared.secret_values)

    def execute(self, run_id: str, *, secrets: dict[str, Any] | None = None, timeout: float | None = None) -> RunOutcome:
        """Execute a recorded run; a run that already ended returns its recorded outcome."""
        run = self.store.get_run(run_id)
        if run is None:
            raise StoreError(f"no run {run_id!r} in the store")
        if run.status in TERMINAL_STATUSES:
            return outcome_of(run)
        try:
            request = self._request_for(run, secrets)
        except (TemplateError, ConfigError) as exc:
            code = getattr(exc, "code", Codes.TEMPLATE_INVALID)
            if isinstance(exc, ConfigError):
                code = Codes.PARAM_INVALID
            self.store.finish_run(run_id, status="failed", outputs=None, error_code=code.code, error_message=str(exc))
            return outcome_of(self.store.get_run(run_id))  # type: ignore[arg-type]
        if not self._started:
            self.start()
        return self.loop.run(self.runner.run(request), timeout=timeout)

    def _request_for(self, run: RunView, secrets: dict[str, Any] | None) -> RunRequest:
        record = self.store.get_template_body(run.template_id)
        loaded = load_template_text(
            record.body,
            source=f"{record.name}@{record.version} (stored)",
            max_selector_length=self.settings.max_selector_length,
            max_repeat=self.settings.max_repeat,
        )
        names = frozenset(secret_names(loaded.template))
        params = dict(run.params or {})
        if names and secrets is None:
            wanted = {n for n in names if params.get(n) == mask(n)}
            secrets = self.secret_box.decrypt(run.secrets, why="this run has secret params") if wanted and run.secrets else {}
            missing = wanted - set(secrets)
            if missing:
                raise ConfigError(f"secret params {sorted(missing)} of this run are not available to the worker")
        params.update(secrets or {})
        started = self.store.start_run(run.id, worker=worker_name())
        return RunRequest(
            run_id=run.id,
            run_attempt=started.attempt,
            loaded=loaded,
            params=params,
            secret_names=names,
        )


def outcome_of(run: RunView) -> RunOutcome:
    return RunOutcome(
        run_id=run.id,
        status=run.status,
        outputs=run.outputs or {},
        error_code=run.error_code,
        error_message=run.error_message,
        error_step_path=run.error_step_path,
    )
