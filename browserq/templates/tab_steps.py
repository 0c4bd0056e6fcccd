"""Steps that move the run between its pages: ``switch_tab``, ``close_tab``, ``new_tab``; ``list_tabs``.

A run starts on one page. A click-like step with ``opens: tab`` waits for the page it opens (a
``target=_blank`` link, ``window.open``) and the steps after it act there; ``switch_tab`` goes to
another open page and ``close_tab`` closes the current one, back to its opener; ``new_tab`` opens
a blank page (or one at a URL inside allowed_domains) and goes on there. The runner keeps
the pages (:mod:`browserq.runner.tabs`).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, field_validator

from browserq.templates.fields import OutputName
from browserq.templates.params import show
from browserq.templates.regex import describe_url_pattern, url_pattern_problem
from browserq.templates.step_base import ActionStep

#: ``switch_tab: to:`` words: the current page's opener, the page the run was on before, the
#: newest page, the run's first page.
TAB_WORDS = ("opener", "previous", "last", "first")
#: The most pages a run keeps open at once (each is a renderer).
MAX_TABS = 50


def _tab_target(value: Any) -> Any:
    """``to:`` is a word, a page index (0: the run's first page) or a URL glob / ``re:`` regex."""
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise ValueError(f"switch_tab to must be {', '.join(TAB_WORDS)}, an index or a URL pattern, got {show(value)}")
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    if isinstance(value, int) and not 0 <= value < MAX_TABS:
        raise ValueError(f"switch_tab to: tab index {value} is out of range (0 to {MAX_TABS - 1}; 0 is the first page)")
    return value


class SwitchTabStep(ActionStep):
    """Make another open page the run's current page (the steps after it act there)."""

    action: Literal["switch_tab"] = "switch_tab"
    to: Annotated[int | str, BeforeValidator(_tab_target)]

    @field_validator("to")
    @classmethod
    def _pattern(cls, value: int | str) -> int | str:
        if isinstance(value, str) and value not in TAB_WORDS and "${" not in value:
            if not value:
                raise ValueError("switch_tab to is empty")
            problem = url_pattern_problem(value)
            if problem:
                raise ValueError(f"switch_tab to: {describe_url_pattern(value)}: {problem}")
        return value


class CloseTabStep(ActionStep):
    """Close the current page and go back to its opener (or the page the run was on before)."""

    action: Literal["close_tab"] = "close_tab"


class ListTabsStep(ActionStep):
    """The run's open pages, oldest first: ``[{index, url, title, current}]`` (``index`` is what
    ``switch_tab: to:`` takes)."""

    action: Literal["list_tabs"] = "list_tabs"
    into: OutputName | None = None


class NewTabStep(ActionStep):
    """Open a new page (blank, or at ``url``, held to allowed_domains as ``navigate``) and make it
    the current page; ``close_tab`` goes back to the page the run was on."""

    action: Literal["new_tab"] = "new_tab"
    url: str | None = None
    wait_until: Literal["load", "domcontentloaded", "networkidle", "commit"] = "load"
    #: Store ``{"index": the new page's index, "status": HTTP status or None, "url": its URL}``.
    into: OutputName | None = None


TAB_STEP_CLASSES: tuple[type[ActionStep], ...] = (SwitchTabStep, CloseTabStep, ListTabsStep, NewTabStep)
