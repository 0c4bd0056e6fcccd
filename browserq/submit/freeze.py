"""``Session.save_template(name, version, params)``: freeze a session that worked into a versioned
template that replays without its agent (``docs/sessions.md``, "Freezing a session").

The session's recorded commands become steps (:mod:`browserq.submit.freeze_steps`); its settings
(allowed_domains, allow_eval, stealth, step_timeout_s…) become the template's, less what only a
session has (its lifetime as ``timeout_s``, ``step_retries: 0``); ``params`` become its params
(a :class:`~browserq.secrets.Secret` a ``secret`` param, never written). The text goes through the
template loader (every check a template file gets) and is written into the templates directory
as ``<name>@<version>.yaml`` — unless that ``name@version`` is taken by another body
(:class:`TemplateTaken`); the same body again is no change.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from browserq.errors import TemplateInvalid, TemplateNotFound
from browserq.redact import Redactor
from browserq.secrets import Secret
from browserq.sessions.errors import FreezeRefused
from browserq.sessions.template import SESSION_TEMPLATE
from browserq.submit.freeze_steps import FrozenSteps, freeze_steps
from browserq.templates.errors import TemplateTaken
from browserq.templates.fields import IDENTIFIER, MAX_NAME_LENGTH, RESERVED_NAMES, SEMVER, SLUG
from browserq.templates.registry import TemplateRegistry

if TYPE_CHECKING:
    from browserq.settings import Settings
    from browserq.store import Store

#: Session settings a template does not inherit: ``timeout_s`` is the session's lifetime there.
_SESSION_ONLY = ("timeout_s",)
#: How long the records of the commands already answered may take to reach the database.
RECORDS_WAIT_S = 30.0


@dataclass(frozen=True)
class SavedTemplate:
    """A frozen session: ``ref`` ("name@version"), the ``path`` written, its YAML ``text``, what
    was ``left_out`` (command index, why) and ``outputs`` (output name → command index)."""

    ref: str
    path: Path
    text: str
    left_out: list[tuple[int, str]] = field(default_factory=list)
    outputs: dict[str, int] = field(default_factory=dict)


def check_ref(name: Any, version: Any) -> None:
    """``TemplateInvalid`` for a name or version a template cannot have (before anything is read)."""
    problems = []
    if not isinstance(name, str) or not SLUG.match(name) or len(name) > MAX_NAME_LENGTH:
        problems.append(f"name {name!r} must be lowercase letters, digits, '_', '.' or '-', starting with a "
                        f"letter or digit, at most {MAX_NAME_LENGTH} characters")
    elif name == SESSION_TEMPLATE:
        problems.append(f"name {name!r} is the one sessions' own runs use; choose another")
    if not isinstance(version, str) or not SEMVER.match(version):
        problems.append(f"version {version!r} must be MAJOR.MINOR.PATCH (e.g. 1.0.0)")
    if problems:
        raise TemplateInvalid("save_template", problems)


def param_specs(params: Mapping[str, Any], session_id: str) -> dict[str, dict[str, Any]]:
    """The template's ``params:`` for the values given (types from the values)."""
    specs: dict[str, dict[str, Any]] = {}
    for name, value in params.items():
        if not IDENTIFIER.match(str(name)) or name in RESERVED_NAMES:
            raise FreezeRefused(f"param name {name!r} must be letters, digits and '_' (not starting with a "
                                "digit; not outputs, loop or run)", session_id=session_id)
        if isinstance(value, Secret):
            specs[name] = {"type": "secret", "required": True}
        elif isinstance(value, bool | int | float | str):
            kind = {bool: "bool", int: "int", float: "float"}.get(type(value), "string")
            if isinstance(value, str) and value.startswith(("http://", "https://")):
                kind = "url"
            specs[name] = {"type": kind, "default": value}
        else:
            raise FreezeRefused(f"param {name!r}: {type(value).__name__} values are not frozen (give a string, "
                                "a number, a bool or a Secret)", session_id=session_id)
    return specs


def freeze_session(store: Store, settings: Settings, session_id: str, name: str, version: str,
                   params: Mapping[str, Any] | None, expected_steps: Iterable[str] = ()) -> SavedTemplate:
    """Freeze session ``session_id`` into ``name@version`` in ``settings.templates_dir``."""
    check_ref(name, version)
    params = dict(params or {})
    specs = param_specs(params, session_id)
    run = store.runs.get_run(session_id)
    if run is None or run.template_name != SESSION_TEMPLATE:
        raise FreezeRefused("no such session", session_id=session_id)
    session_settings = dict(json.loads(store.templates.get_template_body(run.template_id).body)["settings"])
    records = _records(store, session_id, set(expected_steps))
    frozen = freeze_steps(records, params, allowed_domains=list(session_settings.get("allowed_domains") or []),
                          allow_eval=session_settings.get("allow_eval") is True, session_id=session_id)
    if not frozen.steps:
        raise FreezeRefused("none of its commands can be replayed: "
                            + "; ".join(f"command {i}: {why}" for i, why in frozen.left_out[:5]), session_id=session_id)
    tsettings = {k: v for k, v in session_settings.items() if k not in _SESSION_ONLY
                 and not (k == "step_retries" and v == 0)}
    text = template_text(name, version, session_id, specs, tsettings, frozen)
    secrets = Redactor({n: v.value for n, v in params.items() if isinstance(v, Secret)})
    if secrets and secrets.contains(text):  # a last guard: the file must not hold a secret, in any form
        raise FreezeRefused("a secret param's value would be written in the template", session_id=session_id)
    registry = TemplateRegistry.from_settings(settings)
    path = Path(settings.templates_dir) / f"{name}@{version}.yaml"
    loaded = registry.load_text(text, source=str(path))  # every check a template file gets
    pinned = store.templates.template_pin(name, version)
    if pinned is not None and pinned != loaded.canonical_hash:
        raise TemplateTaken(f"{name}@{version}", "the runs that used it (its body is pinned in the store)")
    _write(registry, path, text, loaded.canonical_hash, f"{name}@{version}")
    return SavedTemplate(f"{name}@{version}", path, text, list(frozen.left_out), dict(frozen.outputs))


def _records(store: Store, session_id: str, expected: set[str]) -> list[Any]:
    """The session's step records, once those of the commands answered so far are written
    (the journal holds records back up to ``BROWSERQ_JOURNAL_FLUSH_MS``)."""
    deadline = time.monotonic() + RECORDS_WAIT_S
    while True:
        records = store.steps.steps(session_id)
        missing = expected - {r.step_id for r in records if r.status != "started"}
        if not missing:
            return records
        if time.monotonic() > deadline:
            raise FreezeRefused(f"the records of {len(missing)} of its commands did not reach the database "
                                f"within {RECORDS_WAIT_S:g} s", session_id=session_id)
        time.sleep(0.1)


def template_text(name: str, version: str, session_id: str, specs: Mapping[str, Any], tsettings: Mapping[str, Any],
                  frozen: FrozenSteps) -> str:
    """The YAML: one flow mapping per param and per step (its command index as a comment)."""

    def flow(value: Any) -> str:
        if not isinstance(value, dict | list):  # a scalar alone: as JSON (which YAML reads), no "..." end
            return json.dumps(value, ensure_ascii=False)
        return yaml.safe_dump(value, default_flow_style=True, sort_keys=False, allow_unicode=True,
                              width=1 << 30).strip()

    lines = [f"# Frozen from session {session_id} by Session.save_template: each step is the session's",
             "# command of the index on its line; refs are replaced by the locators captured for them."]
    lines += [f"# left out: command {i}: {why}" for i, why in frozen.left_out]
    lines += [f"name: {name}", f"version: {version}",
              f"description: {flow(f'frozen from agent session {session_id}')}"]
    if specs:
        lines += ["params:"] + [f"  {param}: {flow(spec)}" for param, spec in specs.items()]
    if tsettings:
        lines += ["settings:"] + [f"  {key}: {flow(value)}" for key, value in tsettings.items()]
    lines += ["steps:"] + [f"  - {flow(step)}  # command {index}" for index, step in frozen.steps]
    return "\n".join(lines) + "\n"


def _write(registry: TemplateRegistry, path: Path, text: str, canonical: str, ref: str) -> None:
    """Write ``text`` at ``path``, never over another body: a file declaring ``ref`` (any file
    name) with another body, or another file at ``path``, refuses it; the same body is no change."""
    try:
        existing = registry.resolve(ref)
    except TemplateInvalid as broken:
        raise TemplateTaken(ref, f"a broken template file declares it ({broken.source})") from None
    except TemplateNotFound:  # free (or no templates directory yet: it is made below)
        existing = None
    if existing is not None:
        if existing.canonical_hash != canonical:
            raise TemplateTaken(ref, f"the file {existing.source}")
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    scratch = path.parent / f".{path.name}.{uuid.uuid4().hex}.tmp"  # hidden: the registry skips it
    scratch.write_text(text, encoding="utf-8")
    try:
        os.link(scratch, path)  # fails if the path exists: two savers never overwrite each other
    except FileExistsError:
        try:
            same = registry.load_text(path.read_text(encoding="utf-8"), str(path)).canonical_hash == canonical
        except TemplateInvalid:
            same = False
        if not same:
            raise TemplateTaken(ref, f"the file {path}") from None
    finally:
        with contextlib.suppress(OSError):
            scratch.unlink()


__all__ = ["RECORDS_WAIT_S", "SavedTemplate", "check_ref", "freeze_session", "param_specs", "template_text"]
