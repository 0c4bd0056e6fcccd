"""A session's run template: synthetic, stored like any template, carrying the session's settings.

A session is a run, so ``browserq show/report/live/runs`` work on its id; its template is
``session@<version>``, where the version is derived from a digest of its settings, so sessions
opened with the same settings share one stored template row. The template loader asks for at
least one step: a session's one step is the read of its URL that no walk ever runs (its steps are
the commands it is sent, recorded under paths ``0``, ``1``, … as a template's would be).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from typing import Any

from browserq.templates import LoadedTemplate, load_template_text
from browserq.templates.fields import MAX_RUN_TIMEOUT_S

#: The template name every session's run has (``browserq runs --kind session`` filters on it).
SESSION_TEMPLATE = "session"
#: Why the session's template has a step at all (kept in its stored body).
_DESCRIPTION = (
    "an agent session: its steps are the commands its client sends, recorded as step attempts; "
    "the one step below is what the template loader requires and is never walked"
)


def session_body(settings: Mapping[str, Any], secret_names: Iterable[str], max_lifetime_s: float) -> str:
    """The stored body (JSON, which YAML reads) of the template of a session with ``settings``
    (any template setting: allowed_domains, stealth, rate limits, step_timeout_s…) and secret
    params ``secret_names`` (given at open, masked in every record). A session's commands are
    not retried in place unless its settings say so (``step_retries: 0``): its client decides."""
    tsettings = {"step_retries": 0, **settings, "timeout_s": min(MAX_RUN_TIMEOUT_S, max_lifetime_s)}
    document: dict[str, Any] = {
        "name": SESSION_TEMPLATE,
        "description": _DESCRIPTION,
        "params": {
            "idle_timeout_s": {"type": "float", "required": False},  # what the client asked for
            "max_lifetime_s": {"type": "float", "required": False},
            **{name: {"type": "secret", "required": True} for name in sorted(set(secret_names))},
        },
        "settings": tsettings,
        "steps": [{"id": "session", "action": "get", "what": "url", "into": "url"}],
    }
    digest = hashlib.sha256(json.dumps(document, sort_keys=True, default=str).encode()).hexdigest()
    version = f"0.{int(digest[:7], 16)}.{int(digest[7:14], 16)}"  # each part < 9 digits
    return json.dumps({**document, "version": version}, sort_keys=True, indent=1, default=str)


def session_template(
    settings: Mapping[str, Any], secret_names: Iterable[str], max_lifetime_s: float, *,
    max_selector_length: int, max_repeat: int,
) -> LoadedTemplate:
    """The loaded session template (``TemplateInvalid`` names a setting the schema refuses)."""
    body = session_body(settings, secret_names, max_lifetime_s)
    return load_template_text(body, source="session (settings given to open_session)",
                              max_selector_length=max_selector_length, max_repeat=max_repeat)


__all__ = ["SESSION_TEMPLATE", "session_body", "session_template"]
