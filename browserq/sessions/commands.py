"""A session command as a step: ``command_step("click", ref="e4.17")`` is a ``ClickStep``.

A command is validated by the same step models a template's steps are (one executor, one set
of guards); a ref travels in the step's ``selector`` as ``ref=e4.17`` and is resolved to its node
when the action runs (:mod:`browserq.actions.refs`). Playwright's own ``aria-ref=`` selectors
are refused: they skip the session's checks and may name another node after a navigation.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import ValidationError

from browserq.actions.refs import REF_ACTIONS, REF_PREFIX
from browserq.errors import Codes, StepFailed
from browserq.templates import ACTIONS, ActionStep
from browserq.templates.locators import session_only_problem

#: What a ref can look like at all; anything else was never issued.
_REF_SHAPE = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
#: Actions a session does not take as commands (none now: a ``handoff`` asks a person, see
#: :mod:`browserq.sessions.asked`); kept for code that reads it.
NOT_COMMANDS: frozenset[str] = frozenset()


def command_step(action: str, *, ref: str | None = None, **fields: Any) -> ActionStep:
    """The step a command stands for; ``INVALID_STEP_INPUT`` (or ``REF_UNKNOWN`` for a ref that
    cannot have been issued) when it is no valid step."""
    step_class = ACTIONS.get(action) if action not in NOT_COMMANDS else None
    if step_class is None:
        known = ", ".join(sorted(set(ACTIONS) - NOT_COMMANDS))
        raise StepFailed(Codes.INVALID_STEP_INPUT, f"unknown action {action!r}; one of: {known}")
    selector = fields.get("selector")
    if selector is not None and session_only_problem(selector) is not None:
        raise StepFailed(Codes.INVALID_STEP_INPUT, f"{action}: pass a snapshot's ref as ref=…, not as a selector")
    if ref is not None:
        if selector is not None:
            raise StepFailed(Codes.INVALID_STEP_INPUT, f"{action}: give ref or selector, not both")
        if action not in REF_ACTIONS:
            raise StepFailed(Codes.INVALID_STEP_INPUT, f"{action} takes a selector, not a ref")
        if not _REF_SHAPE.match(str(ref)):
            raise StepFailed(Codes.REF_UNKNOWN, f"ref {ref!r} was never issued by this session's snapshots")
        fields["selector"] = REF_PREFIX + ref
    try:
        return step_class.model_validate({**fields, "action": action})
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in error['loc']) or action}: {error['msg']}"
            for error in exc.errors(include_url=False)
        )
        raise StepFailed(Codes.INVALID_STEP_INPUT, f"{action}: {problems}") from None
