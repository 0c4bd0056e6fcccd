"""A step aimed at a session's ref instead of a selector: ``selector: "ref=e4.17"``.

Only a live session makes such a step (a template refuses ``ref`` at load: a ref means something
only in the session whose snapshot issued it). :func:`ref_guarded` wraps the action's own handler:
the session's :class:`RefResolver` turns the ref into the Playwright selector bound to exactly its
node (or fails ``REF_STALE`` / ``REF_UNKNOWN`` before anything reaches the page), then the same
handler runs with that selector — one executor, one set of guards for refs and selectors.

Before the action runs, the most robust locator for the node (the ranking ``browserq locate``
uses, :mod:`browserq.actions.robust_locator`) is captured and noted on the step attempt's record
(an event ``{"type": "locator", "ref", "selector", "by"}``): freezing the session into a template
writes it where the command had its ref. Only commands with a ref pay for it (a few page calls,
bounded by :data:`CAPTURE_TIMEOUT_S`); it never fails the command.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any, Protocol

import structlog
from playwright.async_api import Page

from browserq.actions.context import StepContext
from browserq.actions.robust_locator import locator_for
from browserq.errors import Codes, StepFailed

log = structlog.get_logger(__name__)

#: How a step's ``selector`` names a session ref.
REF_PREFIX = "ref="
#: The actions a ref may aim (one element each); ``wait`` and ``extract`` take selectors only.
REF_ACTIONS = frozenset({
    "click", "fill", "type", "select", "check", "uncheck", "press", "hover", "get", "scroll",
    "download", "upload",
})
#: The longest the capture of a ref's locator may take (and at most a third of the step's budget).
CAPTURE_TIMEOUT_S = 3.0


class IssuedNode(Protocol):
    """What a ref was given to, as its snapshot showed it."""

    @property
    def role(self) -> str: ...

    @property
    def name(self) -> str: ...


class RefResolver(Protocol):
    """What resolves a session's refs (:class:`browserq.sessions.RefBook`)."""

    async def target(self, page: Page, ref: str) -> str:
        """The Playwright selector bound to the ref's node; raises REF_STALE / REF_UNKNOWN."""

    async def stale(self, page: Page, ref: str) -> StepFailed | None:
        """REF_STALE when the ref no longer resolves (asked after its action failed)."""

    def issued(self, ref: str) -> IssuedNode | None:
        """The role and name the ref's node had in its snapshot (None: not a current ref)."""


def ref_of(selector: object) -> str | None:
    """The ref a selector names (``"ref=e4.17"`` → ``"e4.17"``), or None for any other selector."""
    if isinstance(selector, str) and selector.startswith(REF_PREFIX):
        return selector[len(REF_PREFIX):]
    return None


def ref_guarded(handler: Any) -> Any:
    """``handler`` run on the node a ref was given to, and nothing else.

    The ref is checked before the action (a stale one fails before anything is sent). If the
    node leaves the page while the action waits for it, Playwright's ref selector matches nothing
    and the action times out; that failure is told as ``REF_STALE`` too — except for a side
    effect, whose own failure stays (it may have been dispatched: its outcome is probed)."""

    async def run(ctx: StepContext, step: Any) -> Any:
        ref = ref_of(step.selector)
        assert ref is not None
        refs: RefResolver | None = ctx.refs
        if refs is None:
            raise StepFailed(Codes.INVALID_STEP_INPUT, f"ref {ref} only means something in a live session")
        if step.action not in REF_ACTIONS:
            raise StepFailed(Codes.INVALID_STEP_INPUT, f"{step.action} takes a selector, not a ref")
        bound = await refs.target(ctx.page, ref)
        await capture_locator(ctx, ref, bound, refs.issued(ref))
        try:
            return await handler(ctx, step.model_copy(update={"selector": bound}))
        except StepFailed as exc:
            if exc.code is Codes.SELECTOR_NOT_FOUND and not step.side_effect:
                raise (await refs.stale(ctx.page, ref) or exc) from None
            raise StepFailed(exc.code, exc.message.replace(bound, f"ref {ref}")) from exc
        except Exception:
            stale = None if step.side_effect else await refs.stale(ctx.page, ref)
            if stale is not None:
                raise stale from None
            raise

    return run


async def capture_locator(ctx: StepContext, ref: str, bound: str, node: IssuedNode | None) -> None:
    """Note the most robust locator of the ref's node on the step attempt's record, before the
    action changes the page; ``selector`` None (with ``why``) when none matches it alone."""
    started = time.monotonic()
    budget_s = CAPTURE_TIMEOUT_S
    if ctx.step_deadline is not None:
        budget_s = min(budget_s, max(0.1, (ctx.step_deadline - started) / 3))
    event: dict[str, Any] = {"type": "locator", "ref": ref}
    try:
        async with asyncio.timeout(budget_s):
            found = await locator_for(ctx.page, bound, role=node.role if node else None,
                                      name=node.name if node else None, timeout_ms=budget_s * 1000)
        event.update(selector=found.selector, by=found.strategy)
        if found.notes:
            event["why" if found.selector is None else "note"] = "; ".join(found.notes)
    except Exception as exc:  # the page did not answer in time, or changed: the command goes on
        log.debug("no locator captured", ref=ref, error=type(exc).__name__)
        event.update(selector=None, by="none", why=f"not captured within {budget_s:.1f} s"
                     if isinstance(exc, TimeoutError) else "the page did not describe the node")
    event["ms"] = round((time.monotonic() - started) * 1000, 1)
    ctx.note(event)
