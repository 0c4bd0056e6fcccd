"""Translating Playwright's exceptions into browserq's error codes, at the point they enter.

Everything a page or a selector can do wrong becomes a :class:`StepFailed` with a code; only a
browser that is no longer connected becomes an :class:`InfrastructureError`.
"""

from __future__ import annotations

from playwright.async_api import Error as PlaywrightError
from playwright.async_api import TimeoutError as PlaywrightTimeoutError

from browserq.errors import Codes, ErrorCode, InfrastructureError, StepFailed

_PROXY_MARKERS = ("ERR_PROXY_CONNECTION_FAILED", "ERR_TUNNEL_CONNECTION_FAILED", "ERR_PROXY_AUTH")
_CLOSED_MARKERS = ("Target page, context or browser has been closed", "Target closed", "has been closed")


def first_line(exc: BaseException, limit: int = 500) -> str:
    """The useful part of a Playwright message: its first line plus the 'waiting for' hint."""
    text = str(exc).strip()
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if not lines:
        return type(exc).__name__
    message = lines[0]
    hint = next((line for line in lines[1:] if line.startswith("- waiting for")), None)
    if hint:
        message = f"{message} ({hint[2:]})"
    return message[:limit]


def translate(exc: BaseException, *, browser_connected: bool, element_missing: bool | None = None) -> StepFailed:
    """Map an exception raised while running a step to the StepFailed that describes it."""
    if isinstance(exc, StepFailed):
        return exc
    message = first_line(exc)
    if not browser_connected:
        return InfrastructureError(f"browser disconnected: {message}")
    if isinstance(exc, PlaywrightTimeoutError | TimeoutError):
        code: ErrorCode = Codes.TIMEOUT
        if element_missing is True:
            code = Codes.SELECTOR_NOT_FOUND
        elif element_missing is False:
            code = Codes.ELEMENT_NOT_ACTIONABLE
        return StepFailed(code, message)
    if isinstance(exc, PlaywrightError):
        text = str(exc)
        if any(marker in text for marker in _PROXY_MARKERS):
            return StepFailed(Codes.PROXY_FAILED, message)
        if "net::ERR_" in text or "NS_ERROR" in text:
            return StepFailed(Codes.NAVIGATION_FAILED, message)
        if any(marker in text for marker in _CLOSED_MARKERS) or "crash" in text.lower():
            return StepFailed(Codes.PAGE_CRASHED, message)
        if "strict mode violation" in text or "not a valid selector" in text or "Unexpected token" in text:
            return StepFailed(Codes.INVALID_STEP_INPUT, message)
        return StepFailed(Codes.ACTION_FAILED, message)
    return StepFailed(Codes.INTERNAL, f"{type(exc).__name__}: {message}")
