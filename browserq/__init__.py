"""browserq: a durable browser-automation queue on Celery and Playwright.

    from browserq import run_template
    result = run_template.delay("quotes@1.2", params={"start_url": "https://…"})

``run_template`` is imported lazily so that ``import browserq`` stays cheap for tools that only
need settings or templates.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from browserq.errors import (
    BrokerUnavailable,
    BrowserqError,
    ConfigError,
    ParamError,
    RunFailed,
    StepFailed,
    TemplateError,
    TemplateInvalid,
    TemplateNotFound,
)
from browserq.logs import library_defaults

library_defaults()  # browserq's events reach the standard logging module unless told otherwise

if TYPE_CHECKING:
    from celery import Celery, Task

    app: Celery
    run_template: Task

__version__ = "0.1.0"

__all__ = [
    "BrokerUnavailable",
    "BrowserqError",
    "CommandFailed",
    "ConfigError",
    "ParamError",
    "RunFailed",
    "Secret",
    "SessionCapacity",
    "SessionClosed",
    "StepFailed",
    "TemplateError",
    "TemplateInvalid",
    "TemplateNotFound",
    "__version__",
    "app",
    "batch_summary",
    "cancel_run",
    "open_session",
    "open_session_async",
    "resolve_run",
    "run_batch",
    "run_template",
]


def __getattr__(name: str) -> Any:
    if name in {"run_template", "app", "cancel_run"}:
        from browserq import celery_app

        return getattr(celery_app, name)
    if name == "resolve_run":
        from browserq.submit.reviews import resolve_run

        return resolve_run
    if name in {"open_session", "open_session_async"}:
        from browserq import celery_app  # the producer's door is installed with the app
        from browserq.submit import sessions

        return getattr(sessions, name)
    if name == "Secret":
        from browserq.secrets import Secret

        return Secret
    if name in {"CommandFailed", "SessionClosed", "SessionCapacity"}:
        from browserq.sessions import errors

        return getattr(errors, name)
    if name in {"run_batch", "batch_summary"}:
        from browserq.submit import batches

        return getattr(batches, name)
    raise AttributeError(f"module 'browserq' has no attribute {name!r}")
