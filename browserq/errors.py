"""browserq's errors: one tree, and one table of error codes whose entries carry the retry policy.

    BrowserqError                                                   [policy] (code)  where
    ├── ConfigError              settings are wrong (missing key, bad path, unknown setting)
    │   ├── InvalidRate          a rate or rate map cannot be parsed (limit_specs.py raises these)
    │   ├── InvalidBlockKind     a resource kind that cannot be blocked
    │   ├── InvalidTenantCaps    tenant caps are malformed
    │   ├── TemplatesDirMissing  no templates directory (also a TemplateNotFound) templates/errors.py
    │   └── BrowserLaunchFailed  Chromium or its driver would not start; says what to fix
    │                            (also a BrowserUnusable, below)                 browsers/errors.py
    ├── TemplateError            a template cannot be used
    │   ├── TemplateNotFound     no such name / version in the registry
    │   ├── TemplateInvalid      YAML or schema problem (carries file and line)
    │   ├── TemplateChanged      a used name@version now has another body (bump the version)
    │   └── TemplateTaken        a file already declares name@version with another body
    │                            (freezing a session there is refused)      templates/errors.py
    ├── ParamError               run parameters do not match the template's params
    ├── BrokerUnavailable        the producer could not hand the run to the broker
    ├── LimitsUnavailable        the limits Redis is unreachable              [WAIT] limits/errors.py
    ├── TenantBusy               every slot of the run's tenant stayed taken  [WAIT] limits/errors.py
    ├── StoreError               the run store (database) failed                  store/errors.py
    │   ├── StoreUnavailable     the database stayed unreachable for the retry window  [WAIT]
    │   ├── DuplicateRun         the idempotency key is another run's
    │   ├── IllegalTransition    a status change the state machine forbids (a caller's bug)
    │   ├── RunAlreadyFinished   the run is final; it is not run again
    │   ├── NotInReview          only a needs_review run can be resolved
    │   ├── LeaseBusy            another live worker holds the run's lease             [WAIT]
    │   ├── LeaseLost            a fenced write whose lease token is no longer the run's
    │   └── IdentityError        an identity cannot be used
    │       ├── IdentityNotFound   no such identity, none usable in its pool (IDENTITY_UNAVAILABLE)
    │       ├── IdentityDisabled   the identity was disabled                 (IDENTITY_UNAVAILABLE)
    │       ├── IdentityBusy       leased to another live run, or the whole pool is    [WAIT]
    │       └── IdentityLeaseLost  a fenced identity write whose token is no longer current
    ├── RunFailed                a run ended failed or needs_review: what ``result.get()`` raises
    ├── RunBusy                  another live worker holds the run's lease   [WAIT] execute/errors.py
    ├── ResolveRefused           a resolution that would re-run an unknown step blindly, or
    │                            start where no retry can               execute/errors.py
    ├── WorkerUnusable           no browser in this process; it exits [INFRASTRUCTURE] execute/errors.py
    ├── SessionError             an agent session could not do what was asked   sessions/errors.py
    │   ├── CommandFailed        one command failed (code, retryable, epoch); the session goes on
    │   ├── SessionClosed        the session is closed, expired or its worker is lost (why)
    │   ├── SessionCapacity      no room for another session now (retry_after_s)     [WAIT]
    │   └── FreezeRefused        the session cannot be frozen into a template as asked (why)
    └── StepFailed               a step failed; carries an ErrorCode (tool error, never infra)
        ├── InfrastructureError  the browser crashed or disconnected: recycle it  [INFRASTRUCTURE]
        │   └── BrowserUnusable  no working browser even after a relaunch     browsers/errors.py
        ├── NeedsReview          a side effect's outcome is unknown  [NEEDS_REVIEW] (OUTCOME_UNKNOWN)
        ├── ArtifactPathDenied   an artifact path would leave the artifacts dir    store/errors.py
        └── RateLimitTimeout     the next request slot is past the run's budget (RUN_TIMEOUT)
                                                                                  limits/errors.py

Every class carries its ``policy`` (PERMANENT unless marked, ``[WAIT]`` also gives
``retry_in_s``; a ``StepFailed``'s is its code's); ``(CODE)`` is the error code it records.

A *step* failure (selector missing, JS exception, timeout, assertion) is a ``StepFailed``: the
runner records it and retries in place when the code says so. Only ``InfrastructureError`` makes a
worker relaunch its browser.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any


class ErrorClass(StrEnum):
    """What to do about an error (its *policy*): the decision travels with the error's type or
    code, and the execution layer acts on it without special cases."""

    RETRY_IN_PLACE = "retry_in_place"  # transient: try the same step again, same context
    RETRY_RUN = "retry_run"  # retry the whole run later, in a fresh context (spends a run retry)
    ROTATE_IDENTITY = "rotate_identity"  # blocked / proxy failure: retry with another identity and proxy
    WAIT = "wait"  # something the run needs is held elsewhere: retry after ``retry_in_s``, no retry spent
    PERMANENT = "permanent"  # retrying cannot help
    NEEDS_REVIEW = "needs_review"  # a side effect's outcome is unknown: a person decides
    INFRASTRUCTURE = "infrastructure"  # browser gone: relaunch it, then resume the run


#: The policy of an error: what the execution layer does about it (see :class:`ErrorClass`).
Policy = ErrorClass


@dataclass(frozen=True, slots=True)
class ErrorCode:
    code: str
    error_class: ErrorClass
    summary: str

    @property
    def retryable(self) -> bool:
        return self.error_class not in (ErrorClass.PERMANENT, ErrorClass.NEEDS_REVIEW)


def _code(code: str, cls: ErrorClass, summary: str) -> ErrorCode:
    return ErrorCode(code, cls, summary)


class Codes:
    """Every error code browserq records. ``Codes.by_name`` finds one from its string."""

    SELECTOR_NOT_FOUND = _code("SELECTOR_NOT_FOUND", ErrorClass.RETRY_IN_PLACE, "no element matched")
    TIMEOUT = _code("TIMEOUT", ErrorClass.RETRY_IN_PLACE, "an operation timed out")
    NAVIGATION_FAILED = _code("NAVIGATION_FAILED", ErrorClass.RETRY_IN_PLACE, "the page did not load")
    HTTP_5XX = _code("HTTP_5XX", ErrorClass.RETRY_IN_PLACE, "the server answered 5xx")
    HTTP_4XX = _code("HTTP_4XX", ErrorClass.PERMANENT, "the server answered 4xx")
    BLOCKED = _code("BLOCKED", ErrorClass.ROTATE_IDENTITY, "the site blocked us (403/429/captcha)")
    PROXY_FAILED = _code("PROXY_FAILED", ErrorClass.ROTATE_IDENTITY, "the proxy failed")
    IDENTITY_UNAVAILABLE = _code(
        "IDENTITY_UNAVAILABLE", ErrorClass.PERMANENT, "the identity asked for does not exist or is disabled"
    )
    SESSION_EXPIRED = _code(
        "SESSION_EXPIRED", ErrorClass.ROTATE_IDENTITY, "logged out, and logging in again did not help"
    )
    VALUE_MISMATCH = _code("VALUE_MISMATCH", ErrorClass.RETRY_IN_PLACE, "a filled value did not stick")
    ELEMENT_NOT_ACTIONABLE = _code(
        "ELEMENT_NOT_ACTIONABLE", ErrorClass.RETRY_IN_PLACE, "element hidden, disabled or detached"
    )
    ACTION_FAILED = _code("ACTION_FAILED", ErrorClass.RETRY_IN_PLACE, "the browser rejected the action")
    TAB_NOT_OPENED = _code(
        "TAB_NOT_OPENED", ErrorClass.RETRY_IN_PLACE, "a step with opens: tab opened no page in time"
    )
    TAB_NOT_FOUND = _code("TAB_NOT_FOUND", ErrorClass.RETRY_IN_PLACE, "no open page matches switch_tab/close_tab")
    DOWNLOAD_FAILED = _code(
        "DOWNLOAD_FAILED", ErrorClass.RETRY_IN_PLACE, "no download started, or it failed before it finished"
    )
    DOWNLOAD_TOO_LARGE = _code(
        "DOWNLOAD_TOO_LARGE", ErrorClass.PERMANENT, "a download exceeds BROWSERQ_MAX_(RUN_)DOWNLOAD_BYTES"
    )
    ARTIFACTS_TOO_LARGE = _code(
        "ARTIFACTS_TOO_LARGE", ErrorClass.PERMANENT, "the run's artifacts exceed BROWSERQ_MAX_RUN_ARTIFACT_BYTES"
    )
    UPLOAD_FILE_MISSING = _code(
        "UPLOAD_FILE_MISSING", ErrorClass.PERMANENT, "the file an upload step names does not exist"
    )
    EVAL_ERROR = _code("EVAL_ERROR", ErrorClass.PERMANENT, "the JavaScript expression threw")
    EVAL_DISABLED = _code("EVAL_DISABLED", ErrorClass.PERMANENT, "eval is not enabled by the template")
    ASSERTION_FAILED = _code("ASSERTION_FAILED", ErrorClass.PERMANENT, "an assert step did not hold")
    URL_DENIED = _code("URL_DENIED", ErrorClass.PERMANENT, "URL scheme is not http(s)")
    DOMAIN_DENIED = _code("DOMAIN_DENIED", ErrorClass.PERMANENT, "host outside allowed_domains")
    PATH_DENIED = _code("PATH_DENIED", ErrorClass.PERMANENT, "artifact path escapes the artifact dir")
    INVALID_STEP_INPUT = _code("INVALID_STEP_INPUT", ErrorClass.PERMANENT, "a step input is invalid")
    TEMPLATE_INVALID = _code("TEMPLATE_INVALID", ErrorClass.PERMANENT, "the template is invalid")
    TEMPLATE_NOT_FOUND = _code("TEMPLATE_NOT_FOUND", ErrorClass.PERMANENT, "no such template")
    PARAM_INVALID = _code("PARAM_INVALID", ErrorClass.PERMANENT, "run parameters are invalid")
    RUN_TIMEOUT = _code("RUN_TIMEOUT", ErrorClass.RETRY_RUN, "the run exceeded its time budget")
    PAGE_CRASHED = _code("PAGE_CRASHED", ErrorClass.RETRY_RUN, "the page's renderer crashed or closed")
    BROWSER_CRASHED = _code("BROWSER_CRASHED", ErrorClass.INFRASTRUCTURE, "the browser crashed")
    CANCELLED = _code("CANCELLED", ErrorClass.PERMANENT, "the run was cancelled")
    HUMAN_TIMEOUT = _code(
        "HUMAN_TIMEOUT", ErrorClass.PERMANENT, "nobody finished a handoff within its timeout_s"
    )
    HUMAN_GAVE_UP = _code("HUMAN_GAVE_UP", ErrorClass.PERMANENT, "a person gave up on a handoff")
    OUTCOME_UNKNOWN = _code(
        "OUTCOME_UNKNOWN", ErrorClass.NEEDS_REVIEW, "a side effect may or may not have happened"
    )
    WORKER_LOST_REPEATEDLY = _code(
        "WORKER_LOST_REPEATEDLY",
        ErrorClass.PERMANENT,
        "the run's lease expired too many times: its worker kept stopping (poison)",
    )
    WORKER_LOST = _code("WORKER_LOST", ErrorClass.RETRY_RUN, "the worker died mid-run")
    LIMITS_UNAVAILABLE = _code(
        "LIMITS_UNAVAILABLE", ErrorClass.WAIT, "the Redis of the rate limits stopped answering mid-run"
    )
    INTERNAL = _code("INTERNAL", ErrorClass.PERMANENT, "a bug in browserq")
    OUTPUT_TOO_LARGE = _code(
        "OUTPUT_TOO_LARGE", ErrorClass.PERMANENT, "a step's or the run's outputs exceed the size limit"
    )
    OUTPUT_INVALID = _code(
        "OUTPUT_INVALID", ErrorClass.PERMANENT, "a step's result is not data (circular or nested too deep)"
    )
    STORE_WRITE_FAILED = _code(
        "STORE_WRITE_FAILED", ErrorClass.PERMANENT, "the database refused to record the run's result"
    )
    EXECUTION_CRASHED = _code(
        "EXECUTION_CRASHED", ErrorClass.PERMANENT, "executing the run crashed repeatedly (poison)"
    )
    SESSION_IDLE = _code(
        "SESSION_IDLE", ErrorClass.PERMANENT, "a session received no command for its idle_timeout_s: closed"
    )
    SESSION_LIFETIME = _code(
        "SESSION_LIFETIME", ErrorClass.PERMANENT, "a session reached its max_lifetime_s: closed"
    )
    SESSION_CAPACITY = _code(
        "SESSION_CAPACITY", ErrorClass.WAIT, "no worker process had room for another session"
    )
    SESSION_WAITING_FOR_HUMAN = _code(
        "SESSION_WAITING_FOR_HUMAN", ErrorClass.WAIT,
        "a person has the session's page (a handoff): the command was not run; send it again after the handoff",
    )
    REF_STALE = _code(
        "REF_STALE", ErrorClass.PERMANENT,
        "a session's ref names a node that left the page, or a page that navigated since: snapshot again",
    )
    REF_UNKNOWN = _code("REF_UNKNOWN", ErrorClass.PERMANENT, "a ref that this session's snapshots never issued")
    COMMAND_EXPIRED = _code(
        "COMMAND_EXPIRED", ErrorClass.RETRY_RUN,
        "a session's command reached its worker after its start window: not run; send it again",
    )

    @classmethod
    def all(cls) -> list[ErrorCode]:
        return [v for v in vars(cls).values() if isinstance(v, ErrorCode)]

    @classmethod
    def by_name(cls, name: str) -> ErrorCode:
        found = getattr(cls, name, None)
        if not isinstance(found, ErrorCode):
            raise KeyError(name)
        return found


class BrowserqError(Exception):
    """Root of every error browserq raises on purpose.

    ``policy`` says what the execution layer does when the error ends an attempt; ``retry_in_s``
    is the delay a ``WAIT`` (or run-level retry) error asks for, when it knows one.
    """

    policy: ErrorClass = ErrorClass.PERMANENT
    retry_in_s: float | None = None


class ConfigError(BrowserqError):
    """A setting is missing or wrong; the message names the variable to fix."""


class InvalidRate(ConfigError, ValueError):
    """A rate string (or a map of them) could not be parsed; the message shows the valid form.

    Also a ``ValueError``, so pydantic validators can raise it unchanged.
    """

    policy = ErrorClass.PERMANENT


class InvalidBlockKind(ConfigError, ValueError):
    """A resource kind that cannot be blocked (also a ``ValueError`` for pydantic validators)."""

    policy = ErrorClass.PERMANENT


class InvalidTenantCaps(ConfigError, ValueError):
    """``BROWSERQ_TENANT_CAPS`` (or a caps mapping) is malformed."""

    policy = ErrorClass.PERMANENT


class TemplateError(BrowserqError):
    code: ErrorCode = Codes.TEMPLATE_INVALID


class TemplateNotFound(TemplateError):
    code = Codes.TEMPLATE_NOT_FOUND


class TemplateInvalid(TemplateError):
    """A template failed to parse or validate. ``problems`` lists every problem found."""

    def __init__(
        self, source: str, problems: list[str], *, name: str | None = None, version: str | None = None
    ) -> None:
        self.source = source
        self.problems = problems
        #: What the file says it is, as far as it could be read (the registry files it under it).
        self.name = name
        self.version = version
        joined = "\n  - ".join(problems)
        if name:
            label = f"{name}@{version}" if version else name
            super().__init__(f"template {label} is invalid ({source}):\n  - {joined}")
        else:
            super().__init__(f"{source}: invalid template:\n  - {joined}")


class TemplateChanged(TemplateError):
    """A ``name@version`` that runs already used now has another body: versions are immutable."""

    def __init__(self, ref: str, source: str, new_hash: str, used_hash: str) -> None:
        self.ref = ref
        self.source = source
        self.new_hash = new_hash
        self.used_hash = used_hash
        super().__init__(
            f"template {ref} ({source}) has changed since runs used it (content hash "
            f"{new_hash[:12]}, runs used {used_hash[:12]}): a version is immutable once used. "
            "Bump `version:` in the file to release the change (earlier runs keep their stored body)"
        )


class ParamError(BrowserqError):
    """Run parameters do not satisfy the template. ``problems`` has one line per parameter."""

    code = Codes.PARAM_INVALID

    def __init__(self, template: str, problems: list[str]) -> None:
        self.template = template
        self.problems = problems
        joined = "\n  - ".join(problems)
        super().__init__(f"invalid params for template {template}:\n  - {joined}")


class BrokerUnavailable(BrowserqError):
    """The broker could not be reached when enqueueing; nothing was enqueued."""


class StoreError(BrowserqError):
    """The run store failed in a way the caller should see."""


class StepFailed(BrowserqError):
    """A step failed for a reason the template or the site caused: record it, maybe retry it."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        self.code = code
        self.message = message
        super().__init__(f"{code.code}: {message}")

    @property
    def retryable(self) -> bool:
        return self.code.retryable

    @property
    def policy(self) -> ErrorClass:  # type: ignore[override]  # its code's; read-only over the base's class default
        return self.code.error_class


class NeedsReview(StepFailed):
    """A side effect's outcome is unknown and may not be repeated: a person must decide."""

    def __init__(self, message: str) -> None:
        super().__init__(Codes.OUTCOME_UNKNOWN, message)


class InfrastructureError(StepFailed):
    """The browser (not the page) failed: the pool relaunches it."""

    def __init__(self, message: str) -> None:
        super().__init__(Codes.BROWSER_CRASHED, message)


class RunFailed(BrowserqError):
    """A run ended ``failed`` or ``needs_review``: its Celery task ends in FAILURE with this.

    ``result.get()`` raises it and ``result.get(propagate=False)`` returns it; ``.result`` is the
    same dict a completed run returns (``run_id``, ``status``, ``outputs``, ``error`` with ``code``,
    ``message``, ``step``). The dict is the only constructor argument, so the exception survives
    Celery's JSON exception serialization (``exc_type``/``exc_module``/``exc_message``) intact.
    """

    def __init__(self, result: dict[str, Any] | str) -> None:  # str: a message without the dict
        super().__init__(result)
        self.result: dict[str, Any] = dict(result) if isinstance(result, dict) else {"error": {"message": str(result)}}

    @property
    def run_id(self) -> str | None:
        return self.result.get("run_id")

    @property
    def status(self) -> str:
        return str(self.result.get("status") or "failed")

    @property
    def outputs(self) -> dict[str, Any]:
        return self.result.get("outputs") or {}

    @property
    def error(self) -> dict[str, Any]:
        return self.result.get("error") or {}

    @property
    def code(self) -> str | None:
        """The error code string (``SELECTOR_NOT_FOUND``, ``OUTCOME_UNKNOWN``, …)."""
        return self.error.get("code")

    @property
    def message(self) -> str | None:
        return self.error.get("message")

    @property
    def step(self) -> str | None:
        return self.error.get("step")

    def __str__(self) -> str:
        where = f" at step {self.step}" if self.step is not None else ""
        return f"run {self.run_id} {self.status}: {self.code}{where}: {self.message}"

    def __repr__(self) -> str:
        return f"RunFailed({str(self)!r})"
