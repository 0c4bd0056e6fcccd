"""The one place where Playwright's and Chromium's errors become browserq errors.

Three things cross the boundary between browserq and the browser, and each is translated here:

* **Chromium net errors** (``net::ERR_*`` inside a Playwright message): :data:`NET_ERRORS` is the
  single table of them. Each name appears once, with the :class:`~browserq.errors.ErrorCode` a
  failed step records and the proxy failure kind it points at when the page was loaded through a
  proxy (``proxies.classify_error`` reads the same table).
* **a step's exception** (a Playwright error, a timeout): :func:`translate` turns it into the
  :class:`~browserq.errors.StepFailed` that describes it; only a browser that is no longer
  connected becomes an :class:`~browserq.errors.InfrastructureError`.
* **a launch failure**: :func:`launch_failure` turns what ``chromium.launch`` raised into a
  :class:`BrowserLaunchFailed` whose message says what to fix.

Classes drawn in the tree of :mod:`browserq.errors`::

    StepFailed
    └── InfrastructureError
        └── BrowserUnusable          no working browser in this process, even after a relaunch
            └── BrowserLaunchFailed  Chromium would not start (also a ConfigError)
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from browserq.browsers.api import Error as PlaywrightError
from browserq.browsers.api import TimeoutError as PlaywrightTimeoutError
from browserq.errors import (
    Codes,
    ConfigError,
    ErrorClass,
    ErrorCode,
    InfrastructureError,
    StepFailed,
)

# --- errors --------------------------------------------------------------------------------------


class BrowserUnusable(InfrastructureError):
    """Neither a relaunch nor a fresh driver gave this process a working browser.

    The process must make way for a fresh one; the run it was serving is handed back, not failed.
    """

    policy = ErrorClass.INFRASTRUCTURE


class BrowserLaunchFailed(BrowserUnusable, ConfigError):
    """Chromium (or the Playwright driver) would not start; the message says what to fix.

    It is a :class:`~browserq.errors.ConfigError` too: a worker whose browser does not start is
    treated as misconfigured (it tries again at its first task, then makes way), as before.
    Its text is the message alone, without the ``BROWSER_CRASHED:`` prefix of a step failure.
    """

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.args = (message,)


# --- the net-error table ---------------------------------------------------------------------------

#: Proxy failure kinds a net error can point at (``proxies.classify`` adds ``blocked``).
REFUSED = "refused"  # cannot reach / talk to the proxy
TUNNEL = "tunnel"  # the proxy would not open a CONNECT / SOCKS tunnel
AUTH = "auth"  # proxy credentials missing or wrong
TIMEOUT = "timeout"  # the proxy (or the site behind it) never answered


@dataclass(frozen=True, slots=True)
class NetError:
    """One Chromium net error: what a step that hit it records, and whose fault it is via a proxy."""

    name: str  # without the ``net::`` prefix
    code: ErrorCode
    proxy_kind: str | None  # the proxy failure kind, when the page was loaded through a proxy
    meaning: str


def _net(name: str, code: ErrorCode, proxy_kind: str | None, meaning: str) -> NetError:
    """One table row (short, so the table reads as one line per error)."""
    return NetError(name, code, proxy_kind, meaning)


_PROXY, _NAV = Codes.PROXY_FAILED, Codes.NAVIGATION_FAILED

#: Every Chromium net error browserq knows, once each. A ``net::ERR_*`` not listed here is a
#: ``NAVIGATION_FAILED`` that says nothing about a proxy. What Chromium (Playwright 1.65) reports
#: against ``tests/proxies/servers.py``: nothing listening on the proxy port →
#: ERR_PROXY_CONNECTION_FAILED; a proxy that accepts and closes at once → ERR_SOCKET_NOT_CONNECTED
#: or ERR_CONNECTION_RESET (timing); a rejected SOCKS5 handshake → ERR_SOCKS_CONNECTION_FAILED; a
#: CONNECT answered 403 → ERR_TUNNEL_CONNECTION_FAILED; a proxy wanting credentials the context
#: lacks → ERR_INVALID_AUTH_CREDENTIALS. Through a proxy, the browser's connection is to the proxy,
#: which is why resets and empty responses count as the proxy's.
NET_ERROR_TABLE: tuple[NetError, ...] = (
    _net("ERR_PROXY_CONNECTION_FAILED", _PROXY, REFUSED, "nothing answers on the proxy's port"),
    _net("ERR_TUNNEL_CONNECTION_FAILED", _PROXY, TUNNEL, "the proxy refused to open a CONNECT tunnel"),
    _net("ERR_PROXY_AUTH_UNSUPPORTED", _PROXY, AUTH, "the proxy asks for an unsupported auth scheme"),
    _net("ERR_PROXY_AUTH_REQUESTED", _PROXY, AUTH, "the proxy asks for credentials"),
    _net("ERR_PROXY_AUTH_REQUESTED_WITH_NO_CONNECTION", _PROXY, AUTH, "the proxy asks for credentials"),
    _net("ERR_INVALID_AUTH_CREDENTIALS", _NAV, AUTH, "credentials were asked for and not given"),
    _net("ERR_SOCKS_CONNECTION_HOST_UNREACHABLE", _NAV, TUNNEL, "the SOCKS proxy cannot reach the host"),
    _net("ERR_SOCKS_CONNECTION_FAILED", _NAV, REFUSED, "the SOCKS handshake was rejected"),
    _net("ERR_SOCKET_NOT_CONNECTED", _NAV, REFUSED, "the peer closed the connection at once"),
    _net("ERR_CONNECTION_RESET", _NAV, REFUSED, "the connection was reset"),
    _net("ERR_CONNECTION_CLOSED", _NAV, REFUSED, "the connection closed without an answer"),
    _net("ERR_EMPTY_RESPONSE", _NAV, REFUSED, "the server closed without sending anything"),
    _net("ERR_PROXY_CERTIFICATE_INVALID", _NAV, REFUSED, "the HTTPS proxy's certificate is invalid"),
    _net("ERR_MANDATORY_PROXY_CONFIGURATION_FAILED", _NAV, REFUSED, "the proxy configuration failed"),
    _net("ERR_NO_SUPPORTED_PROXIES", _NAV, REFUSED, "no proxy of a supported scheme"),
    _net("ERR_TIMED_OUT", _NAV, TIMEOUT, "the operation timed out"),
    _net("ERR_CONNECTION_TIMED_OUT", _NAV, TIMEOUT, "connecting timed out"),
    _net("ERR_PROXY_TIMED_OUT", _NAV, TIMEOUT, "the proxy did not answer in time"),
    _net("ERR_CONNECTION_REFUSED", _NAV, None, "nothing listens on the site's port"),
    _net("ERR_CONNECTION_FAILED", _NAV, None, "the connection attempt failed"),
    _net("ERR_NAME_NOT_RESOLVED", _NAV, None, "the host name does not resolve"),
    _net("ERR_ADDRESS_UNREACHABLE", _NAV, None, "the address is unreachable"),
    _net("ERR_INTERNET_DISCONNECTED", _NAV, None, "the machine has no network"),
    _net("ERR_BLOCKED_BY_CLIENT", _NAV, None, "browserq's domain guard stopped the request"),
    _net("ERR_ABORTED", _NAV, None, "the load was aborted (another navigation, a download)"),
    _net("ERR_TOO_MANY_REDIRECTS", _NAV, None, "the site redirects in a loop"),
    _net("ERR_INVALID_RESPONSE", _NAV, None, "the server's answer is not HTTP"),
    _net("ERR_UNSAFE_PORT", _NAV, None, "Chromium refuses to connect to this port"),
    _net("ERR_SSL_PROTOCOL_ERROR", _NAV, None, "the TLS handshake failed"),
    _net("ERR_CERT_AUTHORITY_INVALID", _NAV, None, "the site's certificate is not trusted"),
    _net("ERR_CERT_COMMON_NAME_INVALID", _NAV, None, "the certificate is for another host"),
    _net("ERR_CERT_DATE_INVALID", _NAV, None, "the certificate expired or is not valid yet"),
)

#: The table by name.
NET_ERRORS: dict[str, NetError] = {entry.name: entry for entry in NET_ERROR_TABLE}

_NET_ERROR_NAME = re.compile(r"ERR_[A-Z0-9_]+")


def net_errors_in(text: str) -> list[NetError]:
    """The known net errors a message names, in the order it names them."""
    return [NET_ERRORS[name] for name in _NET_ERROR_NAME.findall(text) if name in NET_ERRORS]


def net_error_code(text: str) -> ErrorCode | None:
    """The code of the net error in a Playwright message: PROXY_FAILED when any named error is the
    proxy's, NAVIGATION_FAILED for any other ``net::ERR_*`` (listed or not), else None."""
    if any(entry.code is Codes.PROXY_FAILED for entry in net_errors_in(text)):
        return Codes.PROXY_FAILED
    if "net::ERR_" in text or "NS_ERROR" in text:
        return Codes.NAVIGATION_FAILED
    return None


def net_proxy_kinds(text: str) -> set[str]:
    """The proxy failure kinds the net errors in a message point at."""
    return {entry.proxy_kind for entry in net_errors_in(text) if entry.proxy_kind is not None}


# --- a step's exception ----------------------------------------------------------------------------

_CLOSED_MARKERS = ("Target page, context or browser has been closed", "Target closed", "has been closed")
_BAD_INPUT_MARKERS = ("strict mode violation", "not a valid selector", "Unexpected token")


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
        return StepFailed(_playwright_code(str(exc)), message)
    return StepFailed(Codes.INTERNAL, f"{type(exc).__name__}: {message}")


def _playwright_code(text: str) -> ErrorCode:
    """The code of a Playwright error that is not a timeout, from its whole text."""
    net_code = net_error_code(text)
    if net_code is not None:
        return net_code
    if any(marker in text for marker in _CLOSED_MARKERS) or "crash" in text.lower():
        return Codes.PAGE_CRASHED
    if any(marker in text for marker in _BAD_INPUT_MARKERS):
        return Codes.INVALID_STEP_INPUT
    return Codes.ACTION_FAILED


# --- a launch failure ------------------------------------------------------------------------------

_INSTALL_HINT = (
    "install one (Debian: apt-get install chromium), run `playwright install chromium`, "
    "or set BROWSERQ_CHROMIUM_PATH"
)
_STDERR_LINE = re.compile(r"^\[pid=\d+\]\[err\] ?(.*)$")
_EXIT = re.compile(r"<process did exit: exitCode=(\w+), signal=(\w+)>")
#: How many lines of a crashed Chromium's stderr the message quotes.
STDERR_LINES = 5


def launch_failure(exc: BaseException, executable: str | None) -> BrowserLaunchFailed:
    """What ``chromium.launch`` raised, as an error that says what to fix.

    ``executable`` is the binary browserq asked for (None: Playwright's own build).
    """
    if isinstance(exc, BrowserLaunchFailed):
        return exc
    text = str(exc)
    label = executable or "playwright build"
    if "Executable doesn't exist" in text or "executable doesn't exist" in text:
        if executable is None:
            return BrowserLaunchFailed(f"no Chromium found: {_INSTALL_HINT}")
        return BrowserLaunchFailed(
            f"could not launch Chromium ({label}): the executable does not exist; point "
            "BROWSERQ_CHROMIUM_PATH at a Chromium or Chrome binary, or unset it and run "
            "`playwright install chromium`"
        )
    if "EACCES" in text:
        return BrowserLaunchFailed(
            f"could not launch Chromium ({label}): permission denied; make it executable or point "
            "BROWSERQ_CHROMIUM_PATH at another binary"
        )
    if isinstance(exc, PlaywrightTimeoutError):
        return BrowserLaunchFailed(
            f"could not launch Chromium ({label}): it did not start in time ({first_line(exc)})"
        )
    stderr = _stderr_of(text)
    if stderr or _EXIT.search(text):
        return BrowserLaunchFailed(f"could not launch Chromium ({label}): {_crash_report(text, stderr)}")
    return BrowserLaunchFailed(f"could not launch Chromium ({label}): {first_line(exc)}")


def _stderr_of(text: str) -> list[str]:
    """The first lines Chromium wrote to stderr, from Playwright's "Browser logs" section."""
    logs = text.split("Call log:", 1)[0]
    lines = [m.group(1).strip() for line in logs.splitlines() if (m := _STDERR_LINE.match(line.strip()))]
    return [line for line in lines if line][:STDERR_LINES]


def _crash_report(text: str, stderr: list[str]) -> str:
    """How a Chromium that died at start ended, and what it said (the cause is usually there)."""
    exit_match = _EXIT.search(text)
    how = "it exited as soon as it started"
    if exit_match:
        code, signal = exit_match.groups()
        how += f" (exit code {code})" if signal == "null" else f" (signal {signal})"
    if not stderr:
        return f"{how} and wrote nothing to stderr"
    return f"{how}; its stderr: " + " | ".join(stderr)
