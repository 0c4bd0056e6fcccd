"""Where a run's events may be POSTed: one check for every place a notify URL comes from
(``.delay(notify=…)``, a template's ``settings.notify``, ``BROWSERQ_NOTIFY_URL``)."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from browserq.webhooks.egress import EgressPolicy

MAX_NOTIFY_URL_LENGTH = 2000


def notify_url_problem(value: Any) -> str | None:
    """What is wrong with ``value`` as a notify URL (None: nothing). Credentials in the URL are
    refused: the URL is stored with the run, in clear; a signature authenticates browserq."""
    if not isinstance(value, str):
        return f"notify must be an http(s) URL string, got {type(value).__name__}"
    if len(value) > MAX_NOTIFY_URL_LENGTH:
        return f"notify is {len(value)} characters long; the limit is {MAX_NOTIFY_URL_LENGTH}"
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018 (raises on a bad port)
    except ValueError as exc:
        return f"notify {value[:80]!r} is not a URL: {exc}"
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return f"notify {value[:80]!r} must be an http:// or https:// URL with a host, e.g. https://hooks.example.com/browserq"
    if parts.username is not None or parts.password is not None:
        return ("notify must not carry credentials (user:password@): it is stored with the run; "
                "receivers authenticate browserq by the X-Browserq-Signature header")
    if parts.fragment:
        return f"notify {value[:80]!r} has a #fragment, which is never sent: remove it"
    if any(c.isspace() or ord(c) < 32 for c in value):
        return "notify must not contain spaces or control characters"
    if "${" in value:
        return ("notify is never interpolated: a ${…} in it would be sent as written; give the whole URL "
                "(per run: .delay(notify=…) / enqueue --notify)")
    return None


def notify_egress_problem(url: str, settings: Any) -> str | None:
    """Why the egress policy (``BROWSERQ_WEBHOOK_ALLOWED_*`` of ``settings``) can never let a
    POST to ``url`` out, from the URL alone (None: it may; its host's addresses are checked at
    each POST)."""
    parts = urlsplit(url)
    return EgressPolicy.from_settings(settings).url_problem(parts.hostname or "", parts.port)


def shown_url(url: str) -> str:
    """A notify URL as printed: scheme, host and port only (a path, a query or a user:password
    may itself be a secret, as in chat-service webhook URLs)."""
    parts = urlsplit(url)
    rest = "/…" if (parts.path not in ("", "/") or parts.query) else ""
    host = parts.hostname or "?"
    try:
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        port = ""
    return f"{parts.scheme}://{f'[{host}]' if ':' in host else host}{port}{rest}"


def notify_target(explicit: str | None, template_notify: str | None, default: str | None) -> str | None:
    """The URL a run's events go to: the run's own, else its template's, else the fleet's."""
    return explicit or template_notify or default


__all__ = ["MAX_NOTIFY_URL_LENGTH", "notify_egress_problem", "notify_target", "notify_url_problem", "shown_url"]
