"""What every action step has: the common fields, a side effect's postcondition, and the answer
to the browser dialogs (alert, confirm, prompt) that appear while the step runs.

Split from :mod:`browserq.templates.steps` so that step families living in modules of their
own (:mod:`browserq.templates.tab_steps`) build on the same base without an import cycle.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import model_validator

from browserq.templates.conditions import WhenSpec
from browserq.templates.fields import (
    Interpolable,
    Retries,
    Selector,
    StepId,
    StepSeconds,
    StrictModel,
    Text,
)

#: How a dialog (alert, confirm, prompt, beforeunload) is answered: ``settings.dialogs`` and a
#: step's ``dialog:`` shorthand.
DIALOG_POLICIES = ("dismiss", "accept")


class DialogAnswer(StrictModel):
    """A step's ``dialog:``: accept or dismiss the dialogs that appear while it runs; ``prompt``
    is the text a ``prompt()`` gets when accepted (``{prompt: TEXT}`` alone accepts).
    ``dialog: accept`` is ``{accept: true}``."""

    accept: bool
    prompt: Text | None = None

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, value: Any) -> Any:
        if isinstance(value, str):
            if value not in DIALOG_POLICIES:
                raise ValueError(
                    f"dialog must be accept, dismiss or {{accept: true|false, prompt: TEXT}}, got {value!r}"
                )
            return {"accept": value == "accept"}
        if isinstance(value, dict) and "prompt" in value and "accept" not in value:
            return {**value, "accept": True}  # a prompt's text is given to accept it
        return value

    @model_validator(mode="after")
    def _prompt_needs_accept(self) -> DialogAnswer:
        if self.prompt is not None and not self.accept:
            raise ValueError("dialog: prompt is the text of an accepted prompt; it needs accept: true")
        return self


class Postcondition(StrictModel):
    """How to tell that a side effect happened: probed when its outcome is unknown after a crash.

    ``url`` (optional) is opened first; then every given check must hold.
    """

    url: str | None = None
    selector: Selector | None = None
    text: Text | None = None
    url_matches: str | None = None

    @model_validator(mode="after")
    def _something_to_check(self) -> Postcondition:
        if self.selector is None and self.text is None and self.url_matches is None:
            raise ValueError("postcondition needs at least one of selector, text, url_matches")
        return self


class ActionStep(StrictModel):
    """Fields every action step has; subclasses pin ``action`` and add their own."""

    COMMON_FIELDS: ClassVar[tuple[str, ...]] = (
        "id",
        "action",
        "optional",
        "timeout_s",
        "retries",
        "description",
        "continue_on_error",
        "checkpoint",
        "side_effect",
        "postcondition",
        "on_unknown",
        "dialog",
        "when",
    )

    id: StepId | None = None
    action: str
    optional: bool = False
    timeout_s: Interpolable[StepSeconds] | None = None
    retries: Retries | None = None
    description: str | None = None
    #: Record the failure and go on with the next step instead of failing the run.
    continue_on_error: bool = False
    #: Save a checkpoint after this step: a resumed run continues from here.
    checkpoint: bool = False
    #: This step changes the world (submit, pay, send): never re-executed blindly.
    side_effect: bool = False
    postcondition: Postcondition | None = None
    #: What to do when a side effect's outcome is unknown and its postcondition does not hold:
    #: ``needs_review`` (default) stops the run for a person; ``retry`` says it is safe to repeat.
    on_unknown: Literal["needs_review", "retry"] = "needs_review"
    #: How dialogs that appear while this step runs are answered (default: settings.dialogs).
    dialog: DialogAnswer | None = None
    #: Run the step only when this holds; else it is recorded ``skipped`` with the reason.
    when: WhenSpec | None = None

    @model_validator(mode="after")
    def _side_effect_fields(self) -> ActionStep:
        if not self.side_effect and (self.postcondition is not None or self.on_unknown != "needs_review"):
            raise ValueError("postcondition and on_unknown only apply to steps with side_effect: true")
        return self

    @classmethod
    def own_fields(cls) -> list[str]:
        """The action-specific fields (for messages listing what is allowed)."""
        return [name for name in cls.model_fields if name not in cls.COMMON_FIELDS]
