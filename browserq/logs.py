"""structlog set-up: console rendering for people, JSON lines for machines.

Every log line of the process — browserq's structured logs, and Celery's or any library's standard
``logging`` records, tracebacks included — is scrubbed of the secrets of the runs executing in the
process (:func:`browserq.redact.scrub_active`) before it is rendered.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

import structlog

from browserq.redact import scrub_active, scrub_active_data
from browserq.settings import Settings


def _scrub_event(_logger: Any, _method: str, event_dict: dict[str, Any]) -> dict[str, Any]:
    """structlog processor: the secrets of running runs masked in every field."""
    return scrub_active_data(event_dict)


class SecretsFilter(logging.Filter):
    """A handler filter that masks the running runs' secrets in message and traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        clean = scrub_active(message)
        if clean != message:
            record.msg, record.args = clean, ()
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = scrub_active(record.exc_text)
        return True


def scrub_handlers(logger: logging.Logger | None = None) -> None:
    """Add :class:`SecretsFilter` to every handler of ``logger`` (default: the root logger)."""
    for handler in (logger or logging.getLogger()).handlers:
        if not any(isinstance(f, SecretsFilter) for f in handler.filters):
            handler.addFilter(SecretsFilter())


def configure_logging(settings: Settings) -> None:
    level = logging.getLevelName(settings.log_level.upper())
    if not isinstance(level, int):
        level = logging.INFO
    renderer = (
        structlog.processors.JSONRenderer()
        if settings.log_format == "json"
        else structlog.dev.ConsoleRenderer(colors=sys.stderr.isatty())
    )
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,  # a traceback becomes text, so it can be scrubbed
            _scrub_event,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(level),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=False,
    )
    scrub_handlers()
