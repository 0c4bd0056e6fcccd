"""Browser dialogs (alert, confirm, prompt, beforeunload): answered by the template, recorded.

Without a listener Playwright dismisses every dialog silently, so a ``confirm()`` the run needed
to accept reads ``false`` and nothing says it happened. Here one context-wide listener answers
every dialog of every page of the run: the running step's ``dialog:`` if it has one, else the
template's ``settings.dialogs`` (``dismiss`` by default, today's behaviour). Each dialog becomes
an event on the step attempt it appeared in (``{"type": "dialog", "dialog": "confirm",
"message": …, "answer": "accepted", "prompt": …}``); a dialog between steps goes to the next
step's record. Messages are page text and prompt texts may be params: both pass the run's
redactor (a secret is masked), and messages are cut to :data:`MESSAGE_CHARS`.

With ``settings.human_input`` a dialog is answered after a person's reading time (around
:data:`HUMAN_READ_MS`): detectors time ``alert()`` and call anything under ~30 ms a robot
(infosimples/detect-headless, run in tests/stealth/test_public_pages.py).
"""

from __future__ import annotations

import random
import time
from typing import Any

import structlog
from playwright.async_api import BrowserContext, Dialog

from browserq.redact import Redactor
from browserq.stealth.human import pause
from browserq.templates import DialogAnswer

log = structlog.get_logger(__name__)

#: How much of a dialog's message a record keeps.
MESSAGE_CHARS = 500
#: Dialogs recorded per step attempt at most (a page that alerts in a loop must not fill the row).
MAX_EVENTS = 50
#: How long a person takes to read a dialog and press a button (log-normal around this).
HUMAN_READ_MS = 700.0


class DialogAnswerer:
    """Answers the dialogs of one context; keeps what it did for the step attempt's record."""

    def __init__(self, context: BrowserContext, policy: str, redactor: Redactor, *, human: bool = False) -> None:
        self._default = DialogAnswer(accept=policy == "accept")
        self._human = random.Random() if human else None
        self._redactor = redactor
        self._answer: DialogAnswer | None = None
        self._events: list[dict[str, Any]] = []
        self._dropped = 0
        context.on("dialog", self._on_dialog)

    def arm(self, answer: DialogAnswer | None) -> None:
        """The running step's ``dialog:`` (None: the template's policy again)."""
        self._answer = answer

    def take(self) -> list[dict[str, Any]] | None:
        """The events since the last call (for the step attempt that ends now), or None."""
        events, self._events = self._events, []
        if self._dropped:
            events.append({"type": "dialogs_not_recorded", "count": self._dropped})
            self._dropped = 0
        return events or None

    def note(self, event: dict[str, Any]) -> None:
        """An event the running step records itself (a session's captured locator): kept with
        the dialogs, on the same step attempt's record, within the same :data:`MAX_EVENTS`."""
        if len(self._events) < MAX_EVENTS:
            self._events.append(event)
        else:
            self._dropped += 1

    async def _on_dialog(self, dialog: Dialog) -> None:
        answer = self._answer or self._default
        prompt = None
        if answer.accept and dialog.type == "prompt":  # no text given: what the prompt offers
            prompt = answer.prompt if answer.prompt is not None else dialog.default_value
        event: dict[str, Any] = {
            "type": "dialog",
            "dialog": dialog.type,
            "message": self._redactor.text(dialog.message[:MESSAGE_CHARS]),
            "answer": "accepted" if answer.accept else "dismissed",
            "t": time.time(),
        }
        if prompt is not None:
            event["prompt"] = self._redactor.text(prompt)  # a secret param is masked
        # Kept before answering: the action the dialog interrupted may end (and its record be
        # taken) as soon as the page has its answer, before this coroutine runs on.
        if len(self._events) < MAX_EVENTS:
            self._events.append(event)
        else:
            self._dropped += 1
        try:
            if self._human is not None:
                await pause(self._human, HUMAN_READ_MS)
            if answer.accept:
                await dialog.accept(prompt) if prompt is not None else await dialog.accept()
            else:
                await dialog.dismiss()
        except Exception as exc:  # the page closed meanwhile: nothing is waiting for the answer
            event["answer"] = "unanswered"
            event["error"] = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
        log.info("dialog answered", dialog=dialog.type, answer=event["answer"])
