"""Asking a person to take over: the ``handoff`` step and the template's ``handoff:`` trigger.

A handoff puts the run in ``waiting_for_human``: its page is served in a live view, a person
solves what the automation cannot (a captcha, a one-time code, an unexpected screen) and the run
goes on from where it was once ``until`` holds or they press Continue. Each wait is bounded by
its own ``timeout_s`` (then ``HUMAN_TIMEOUT``); the time waited does not count against the run's
``timeout_s``. The waits of a run together are bounded by its *handoff budget*
(:func:`human_wait_budget_s`), which Celery's time limits leave room for.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import Field, model_validator

from browserq.templates.fields import Selector, StrictModel, Text
from browserq.templates.locators import selector_text
from browserq.templates.step_base import ActionStep

if TYPE_CHECKING:
    from browserq.redact import Redactor

#: One wait's default and longest time (a person must get the chance; a run must not hang).
DEFAULT_HUMAN_TIMEOUT_S = 600.0
MAX_HUMAN_TIMEOUT_S = 86_400.0
#: How often the template's trigger may make one run wait, by default and at most.
DEFAULT_TRIGGER_TIMES = 3
MAX_TRIGGER_TIMES = 20
HumanSeconds = Annotated[float, Field(gt=0, le=MAX_HUMAN_TIMEOUT_S)]
UNTIL_KINDS = ("present", "absent", "url")


class UntilSpec(StrictModel):
    """What means "the person is done": an element there (``present``), gone (``absent``), or
    the page's URL matching a glob (``re:`` for a regex). Checked several times a second."""

    present: Selector | None = None
    absent: Selector | None = None
    url: Annotated[str, Field(min_length=1)] | None = None

    @model_validator(mode="after")
    def _one_kind(self) -> UntilSpec:
        given = [kind for kind in UNTIL_KINDS if getattr(self, kind) is not None]
        if len(given) != 1:
            got = f"; got {' and '.join(given)}" if given else ""
            raise ValueError(f"until needs exactly one of {', '.join(UNTIL_KINDS)}{got}")
        return self

    @property
    def kind(self) -> str:
        return next(kind for kind in UNTIL_KINDS if getattr(self, kind) is not None)


class HandoffStep(ActionStep):
    """Wait for a person: ``message`` is what they read in the live view; ``until`` (optional)
    ends the wait by itself, else they press Continue."""

    action: Literal["handoff"] = "handoff"
    message: Annotated[Text, Field(min_length=1, max_length=2000)]
    until: UntilSpec | None = None
    #: How long to wait for the person (not the step timeout: a person takes minutes).
    timeout_s: HumanSeconds = DEFAULT_HUMAN_TIMEOUT_S

    @model_validator(mode="after")
    def _no_retries(self) -> HandoffStep:
        if self.retries is not None:
            raise ValueError("a handoff step cannot have retries: a person is asked once per step")
        if self.side_effect:
            raise ValueError("a handoff step cannot be a side_effect: mark the steps after it")
        return self


class HandoffTrigger(StrictModel):
    """The template's ``handoff:``: after every step that navigated, if ``when_present`` matches
    an element the run waits for a person until it is gone (or ``until`` holds)."""

    when_present: Selector
    message: Annotated[Text, Field(min_length=1, max_length=2000)] = (
        "The page shows a challenge the automation cannot pass. Solve it; the run goes on "
        "by itself once it is gone (or press Continue)."
    )
    until: UntilSpec | None = None
    timeout_s: HumanSeconds = DEFAULT_HUMAN_TIMEOUT_S
    #: The most times the trigger makes one run wait (then the run fails HUMAN_TIMEOUT at once).
    max_times: Annotated[int, Field(ge=1, le=MAX_TRIGGER_TIMES)] = DEFAULT_TRIGGER_TIMES

    @property
    def done_when(self) -> UntilSpec:
        return self.until or UntilSpec(absent=self.when_present)


def human_wait_budget_s(steps: Iterable[ActionStep], trigger: HandoffTrigger | None) -> float:
    """The longest a run of the template may wait for people in all: every handoff step's
    ``timeout_s`` once, plus the trigger's ``timeout_s`` × ``max_times``. 0: it never waits."""
    total = sum(step.timeout_s for step in steps if isinstance(step, HandoffStep))
    if trigger is not None:
        total += trigger.timeout_s * trigger.max_times
    return float(total)


def until_text(until: UntilSpec | None, redactor: Redactor) -> str | None:
    """``until`` readably, for the handoff record and the live view (None: Continue only).

    It is rendered (``**/done?k=${password}`` holds the value) and goes to the store, the
    webhook, Flower's meta, the live view and the CLI, so it is scrubbed here, where it is made:
    ``redactor`` is the run's (every encoding of every secret of the run)."""
    if until is None:
        return None
    value = getattr(until, until.kind)
    if until.kind == "url":
        return redactor.text(f"url {value!r}")
    shown = repr(value) if isinstance(value, str) else selector_text(dict(value))
    return redactor.text(f"{until.kind} {shown}")


__all__ = [
    "DEFAULT_HUMAN_TIMEOUT_S",
    "HandoffStep",
    "HandoffTrigger",
    "UntilSpec",
    "human_wait_budget_s",
    "until_text",
]
