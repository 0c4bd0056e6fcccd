"""A session's recorded commands → the steps of a template that replays them without its agent.

Each command is a step attempt of the session's run (path ``0``, ``1``, … = its index), recorded
with the step as the executor ran it (values rendered, a secret masked ``[secret:NAME]``) and, for
a command with a ref, the locator captured for the ref's node (an event ``{"type": "locator"}``,
:mod:`browserq.actions.refs`). :func:`freeze_steps` keeps the commands that succeeded, in order:

- a ref becomes the captured locator (none captured: the command is left out, with why);
- a string equal to a param's value becomes ``${param}``; a secret param's value, or its mask,
  becomes ``${param}`` wherever it occurs — the secret is never written; a mask of a secret the
  params do not name is refused (:class:`FreezeRefused`);
- any other ``${`` is written ``$${`` (a literal, as the page showed it);
- what the agent read (``get``, ``extract``, ``eval``) is stored ``into:`` an output, named as
  the client named it or ``<action>_<index>``;
- failed, skipped and unknown commands, screenshots and uploads are left out, with why;
- an ``eval`` is kept only where the session's settings allow eval (the frozen template carries
  them); a navigation's URL is checked against its ``allowed_domains``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from browserq.errors import StepFailed
from browserq.guards import check_url
from browserq.redact import mask
from browserq.secrets import Secret
from browserq.sessions.errors import FreezeRefused
from browserq.sessions.held import COMMAND_OUTPUT

#: What the agent read: its result becomes one of the template's outputs.
READ_ACTIONS = frozenset({"get", "extract", "eval"})
#: Commands a frozen template leaves out whatever happened (why, as told in ``left_out``).
LEFT_OUT_ACTIONS = {
    "screenshot": "a screenshot (evidence of the session, not a step of the task)",
    "upload": "an upload names files of the session's own run; add it by hand with a file param",
    "handoff": "a handoff (what a person did is no step of the task); add a handoff step by hand where one "
               "is needed",
}
#: Fields whose values are names of the language (never a param's value).
_KEYWORDS = frozenset({"action", "into", "what", "by", "wait_until", "state", "load_state", "to",
                       "button", "opens", "dialog", "attribute", "role"})
_MASK = re.compile(r"\[secret:([^\]]{1,200})\]")
#: How a step's keys are written (the database keeps JSON keys in its own order); others between.
_STEP_ORDER = ("action", "selector", "url", "value", "text", "key", "what", "attribute", "fields", "limit")
_LAST = ("side_effect", "optional", "timeout_s", "into")
#: How a locator mapping's keys are written: ``{role: button, name: Send, exact: true}``.
_LOCATOR_ORDER = ("role", "name", "label", "placeholder", "test_id", "text", "alt", "title", "css", "exact",
                  "level", "checked", "disabled", "expanded", "pressed", "selected", "include_hidden", "within", "nth")


@dataclass
class FrozenSteps:
    """The steps (with the command index each came from), the outputs, what was left out."""

    steps: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    outputs: dict[str, int] = field(default_factory=dict)  # output name → command index
    left_out: list[tuple[int, str]] = field(default_factory=list)
    used_params: set[str] = field(default_factory=set)


def last_attempts(records: list[Any]) -> list[tuple[int, Any]]:
    """Each command's last step attempt, by command index (a retry in place is a later attempt)."""
    last: dict[int, Any] = {}
    for record in records:
        if record.step_path.isdigit():
            index = int(record.step_path)
            if index not in last or record.id > last[index].id:
                last[index] = record
    return sorted(last.items())


def freeze_steps(records: list[Any], params: Mapping[str, Any], *, allowed_domains: list[str],
                 allow_eval: bool, session_id: str) -> FrozenSteps:
    """The template steps the session's successful commands stand for (see the module)."""
    frozen = FrozenSteps()
    writer = _Values(params, session_id)
    for index, record in last_attempts(records):
        why = _left_out(record, allow_eval)
        step: dict[str, Any] | None = None
        if why is None:
            step, why = _step_of(record)
        if step is None:
            frozen.left_out.append((index, why or "left out"))
            continue
        step = {key: writer.value(key, value, index) for key, value in step.items()}
        _check_urls(step, writer, allowed_domains, index, session_id)
        if step["action"] in READ_ACTIONS or "into" in step:
            name = step.get("into") if step.get("into") not in (None, COMMAND_OUTPUT) else f"{step['action']}_{index}"
            step["into"] = name
            frozen.outputs.setdefault(str(name), index)
        frozen.steps.append((index, step))
    frozen.used_params = writer.used
    return frozen


def _left_out(record: Any, allow_eval: bool) -> str | None:
    """Why a command is left out before its step is read (None: it may be kept)."""
    if record.status != "succeeded":
        return {"failed": f"it failed ({record.error_code})", "skipped": "it was skipped (optional: its "
                "element was missing)", "unknown": "its outcome is unknown (its worker was lost)"}.get(
            record.status, f"it did not finish ({record.status})")
    if record.action in LEFT_OUT_ACTIONS:
        return LEFT_OUT_ACTIONS[record.action]
    if record.action == "eval" and not allow_eval:
        return "an eval, and the session's settings do not allow eval"
    return None


def _step_of(record: Any) -> tuple[dict[str, Any] | None, str | None]:
    """The step as recorded, its ref replaced by the captured locator; or why it cannot be."""
    step = {k: v for k, v in dict(record.inputs or {}).items() if k != "id"}
    step["action"] = record.action
    selector = step.get("selector")
    if isinstance(selector, str) and selector.startswith("ref="):
        ref = selector.removeprefix("ref=")
        found = [e for e in record.events or [] if e.get("type") == "locator" and e.get("ref") == ref]
        if not found or found[-1].get("selector") is None:
            why = found[-1].get("why") if found else "none was captured (recorded before captures existed)"
            return None, f"no locator matches the node of ref {ref} alone: {why}"
        step["selector"] = found[-1]["selector"]
    if isinstance(step.get("fields"), dict):  # {name: {selector: ".x"}} is written {name: ".x"}
        step["fields"] = {k: v["selector"] if isinstance(v, dict) and list(v) == ["selector"] else v
                          for k, v in step["fields"].items()}
    return ordered(step), None


def ordered(step: dict[str, Any]) -> dict[str, Any]:
    """The step's keys in reading order, its locator mappings' too."""

    def rank(key: str, first: tuple[str, ...]) -> tuple[int, str]:
        if key in _LAST:
            return (len(first) + 1 + _LAST.index(key), key)
        return (first.index(key) if key in first else len(first), key)

    def locator(value: Any) -> Any:
        if not isinstance(value, dict):
            return value
        return {k: locator(value[k]) for k in sorted(value, key=lambda k: rank(k, _LOCATOR_ORDER))}

    return {k: locator(step[k]) if k == "selector" else step[k] for k in sorted(step, key=lambda k: rank(k, _STEP_ORDER))}


def _check_urls(step: dict[str, Any], writer: _Values, allowed: list[str], index: int, session_id: str) -> None:
    if step["action"] not in ("navigate", "download", "new_tab") or not isinstance(step.get("url"), str):
        return
    try:
        check_url(writer.rendered(step["url"]), allowed)
    except StepFailed as denied:
        raise FreezeRefused(f"command {index} ({step['action']}): {denied.message}", session_id=session_id) from None


class _Values:
    """Writes recorded values as template text: params as ``${name}``, literals escaped."""

    def __init__(self, params: Mapping[str, Any], session_id: str) -> None:
        self.session_id = session_id
        self.plain = {name: v for name, v in params.items() if isinstance(v, str) and v}
        self.secrets = {name: v.value for name, v in params.items() if isinstance(v, Secret)}
        self.used: set[str] = set()
        pieces = [(re.escape(mask(name)), name) for name in self.secrets]
        pieces += [(re.escape(value), name) for name, value in self.secrets.items()]
        pieces.sort(key=lambda piece: len(piece[0]), reverse=True)
        self._names = [name for _, name in pieces]
        self._secret = re.compile("|".join(f"({p})" for p, _ in pieces)) if pieces else None

    def value(self, key: str, value: Any, index: int) -> Any:
        if key in _KEYWORDS:
            return value
        if isinstance(value, dict):
            return {k: self.value(k, v, index) for k, v in value.items()}
        if isinstance(value, list):
            return [self.value(key, v, index) for v in value]
        if not isinstance(value, str):
            return value
        for name, plain in self.plain.items():
            if value == plain:
                self.used.add(name)
                return "${" + name + "}"
        return self._text(value, index)

    def _text(self, value: str, index: int) -> str:
        """A literal string: every secret (or its mask) → ``${name}``, other ``${`` → ``$${``."""
        out: list[str] = []
        rest = value
        while self._secret is not None and (match := self._secret.search(rest)):
            name = self._names[(match.lastindex or 1) - 1]
            self.used.add(name)
            out += [self._literal(rest[:match.start()], index), "${" + name + "}"]
            rest = rest[match.end():]
        out.append(self._literal(rest, index))
        return "".join(out)

    def _literal(self, text: str, index: int) -> str:
        unnamed = _MASK.search(text)
        if unnamed is not None:
            raise FreezeRefused(
                f"command {index} used the session's secret {unnamed.group(1)!r} (masked in its record): "
                f"name it in params, e.g. params={{{unnamed.group(1)!r}: Secret(...)}}", session_id=self.session_id)
        return text.replace("${", "$${")

    def rendered(self, text: str) -> str:
        """A written value as a run would render it (a URL to check): params put back."""
        for name, value in {**self.plain, **self.secrets}.items():
            text = text.replace("${" + name + "}", value)
        return text.replace("$${", "${")


__all__ = ["LEFT_OUT_ACTIONS", "READ_ACTIONS", "FrozenSteps", "freeze_steps", "last_attempts"]
