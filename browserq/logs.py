"""structlog set-up: console rendering for people, JSON lines for machines.

Every log line of the process — browserq's structured logs, and Celery's or any library's standard
``logging`` records, tracebacks included — is scrubbed of the secrets of the runs executing in the
process (:func:`browserq.redact.scrub_active`) before it is rendered.

In a Celery process (worker, beat) in JSON mode, :func:`json_stdio` makes whatever else is printed —
Celery's shutdown notices, a library's ``print``, an uncaught exception's traceback — JSON lines
too, so ``… 2>&1 | jq`` reads every line.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import threading
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TextIO

import structlog
from structlog.typing import EventDict

from browserq.redact import scrub_active, scrub_active_data

if TYPE_CHECKING:
    from browserq.settings import Settings


def _scrub_event(_logger: Any, _method: str, event_dict: EventDict) -> EventDict:
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


def library_defaults() -> None:
    """What ``import browserq`` sets up in a process that has not configured structlog: browserq's
    events go to the standard ``logging`` module, one logfmt message each, so the embedding
    application's logging configuration decides what is shown (with none, Python shows warnings
    and errors on stderr, and a producer's ``run accepted`` lines stay quiet). Workers and the
    CLI replace this with :func:`configure_logging`."""
    if structlog.is_configured():
        return
    structlog.configure(
        processors=[
            structlog.stdlib.filter_by_level,
            structlog.contextvars.merge_contextvars,
            _scrub_event,
            structlog.processors.LogfmtRenderer(key_order=["event"], drop_missing=True),
        ],
        wrapper_class=structlog.stdlib.BoundLogger,
        logger_factory=structlog.stdlib.LoggerFactory(),
        cache_logger_on_first_use=False,
    )


#: Celery's success line prints the task's return value: a run's whole outputs. Ours says where they are.
_SUCCESS_WITHOUT_RESULT = "Task %(name)s[%(id)s] succeeded in %(runtime)ss (result in the run store)"


class CeleryResultFilter(logging.Filter):
    """Keep a task's return value (the run's scraped outputs) out of Celery's "succeeded" line."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, dict) and "return_value" in record.args:
            record.msg = _SUCCESS_WITHOUT_RESULT
        return True


#: Celery's result backend logs every retried write with its whole traceback
#: (``Backend._ensure_retryable``). A retry is the expected way through a locked ``celery_taskmeta``
#: row or a connection the store dropped after its host was frozen (store/answering.py): one line
#: naming the error says it; the traceback of Celery's retry loop says nothing more.
_BACKEND_RETRY = "Failed operation %s. Retrying %s more times."


class BackendRetryFilter(logging.Filter):
    """Make Celery's result-backend retry warning one line with the error, without a traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.msg == _BACKEND_RETRY and record.exc_info and isinstance(record.args, tuple):
            error = record.exc_info[1]
            text = (str(error).strip().splitlines() or [""])[0]
            operation, left = (*record.args, "?", "?")[:2]
            record.msg = "result backend: %s failed (%s); retrying %s more times"
            record.args = (operation, f"{type(error).__name__}: {text}"[:300], left)
            record.exc_info, record.exc_text = None, None
        return True


def _level(name: str | None, default: int = logging.INFO) -> int:
    level = logging.getLevelName((name or "").upper())
    return level if isinstance(level, int) else default


def _renderer(settings: Settings) -> Any:
    if settings.log_format == "json":
        return structlog.processors.JSONRenderer()
    return structlog.dev.ConsoleRenderer(colors=sys.stderr.isatty())


def configure_logging(settings: Settings) -> None:
    """One handler on the root logger renders every line — browserq's structured events and the
    standard ``logging`` records of Celery and libraries — as JSON lines or console text, with
    each record's own level and no prefix (Celery is told not to set up logging or redirect
    stdout: see :mod:`browserq.tasks.signals`). Safe to call again (after a fork): the handler is
    replaced, never doubled."""
    level = _level(settings.log_level)
    shared: list[Any] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        structlog.stdlib.add_logger_name,
    ]
    structlog.configure(
        processors=[*shared, _scrub_event, structlog.stdlib.ProcessorFormatter.wrap_for_formatter],
        wrapper_class=structlog.make_filtering_bound_logger(level),
        logger_factory=structlog.stdlib.LoggerFactory(),
        cache_logger_on_first_use=False,
    )
    formatter = structlog.stdlib.ProcessorFormatter(
        processors=[
            structlog.stdlib.ProcessorFormatter.remove_processors_meta,
            structlog.processors.format_exc_info,  # a traceback becomes text, so it can be scrubbed
            _scrub_event,
            _renderer(settings),
        ],
        foreign_pre_chain=shared,
    )
    handler = logging.StreamHandler(raw_stream(sys.stderr))  # its lines are rendered already
    handler.set_name(HANDLER_NAME)
    handler.setFormatter(formatter)
    handler.addFilter(CeleryResultFilter())
    handler.addFilter(BackendRetryFilter())
    root = logging.getLogger()
    for old in [h for h in root.handlers if h.get_name() == HANDLER_NAME]:
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level)
    logging.captureWarnings(True)  # a Python warning is a log line too (JSON when JSON is asked for)
    scrub_handlers()


#: The name of browserq's root handler (so configuring again replaces it).
HANDLER_NAME = "browserq"


class JsonLines:
    """A text stream for ``sys.stdout``/``sys.stderr`` whose every line is written to ``raw`` as a
    JSON log record (``event``: the line, scrubbed of running secrets; ``level``; ``logger``:
    the stream's name; ``timestamp``), so output nobody logged still parses."""

    def __init__(self, raw: TextIO, name: str, level: str) -> None:
        self.raw, self.name, self.level = raw, name, level
        self._pending = ""
        self._lock = threading.Lock()
        # What is written to the descriptor itself (Celery's notices use os.write, a subprocess
        # inherits it) goes through a pipe this process relays line by line (a forked child
        # writes into the same pipe; its parent relays).
        self._read_fd, self._write_fd = os.pipe()
        threading.Thread(target=self._relay, name=f"browserq-json-{name}", daemon=True).start()
        os.register_at_fork(after_in_child=self._after_fork)

    def _relay(self) -> None:
        with open(self._read_fd, encoding="utf-8", errors="replace", closefd=True) as pipe:
            for line in pipe:
                self.write(line)

    def _after_fork(self) -> None:
        self._lock = threading.Lock()  # the relay thread may have held it: it is not in this child

    def write(self, text: str) -> int:
        with self._lock:
            *lines, self._pending = (self._pending + text).split("\n")
            for line in lines:
                self._emit(line)
        return len(text)

    def flush(self) -> None:
        with self._lock:
            if self._pending:
                self._emit(self._pending)
                self._pending = ""
        self.raw.flush()

    def _emit(self, line: str) -> None:
        line = line.rstrip("\r")
        if not line.strip():  # a banner's blank line is nothing to read
            return
        record = {"event": scrub_active(line), "level": self.level, "logger": self.name,
                  "timestamp": datetime.now(UTC).isoformat().replace("+00:00", "Z")}
        self.raw.write(json.dumps(record, ensure_ascii=False) + "\n")
        self.raw.flush()

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def fileno(self) -> int:
        return self._write_fd

    @property
    def closed(self) -> bool:
        return False

    def isatty(self) -> bool:
        return False  # no colours, no progress bars: a reader of JSON is no terminal

    def writable(self) -> bool:
        return True

    @property
    def encoding(self) -> str:
        return getattr(self.raw, "encoding", "utf-8")


def raw_stream(stream: Any) -> Any:
    """The stream :class:`JsonLines` writes to, for a handler whose lines are rendered already."""
    return stream.raw if isinstance(stream, JsonLines) else stream


def _log_uncaught(exc_type: Any, exc: BaseException, tb: Any, thread: str | None = None) -> None:
    where = f" in thread {thread}" if thread else ""
    logging.getLogger("browserq.uncaught").error(f"uncaught {exc_type.__name__}{where}: {exc}",
                                                 exc_info=(exc_type, exc, tb))


def json_stdio() -> None:
    """Every line this process prints becomes JSON: stdout and stderr (and ``sys.__stdout__``,
    where Celery writes its notices) become :class:`JsonLines`, and an uncaught exception, in
    any thread, is one error record with its traceback. Safe to call again (after a fork)."""
    for name, level in (("stdout", "info"), ("stderr", "warning")):
        current = getattr(sys, name)
        wrapped = current if isinstance(current, JsonLines) else JsonLines(current, name, level)
        setattr(sys, name, wrapped)
        setattr(sys, f"__{name}__", wrapped)
    sys.excepthook = _log_uncaught
    threading.excepthook = lambda args: _log_uncaught(
        args.exc_type, args.exc_value or args.exc_type(), args.exc_traceback,
        args.thread.name if args.thread else None)
