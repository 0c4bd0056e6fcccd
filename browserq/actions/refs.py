"""A step aimed at a session's ref instead of a selector: ``selector: "ref=e4.17"``.

Only a live session makes such a step (a template refuses ``ref`` at load: a ref means something
only in the session whose snapshot issued it). :func:`ref_guarded` wraps the action's own handler:
the session's :class:`RefResolver` turns the ref into the Playwright selector bound to exactly its
node (or fails ``REF_STALE`` / ``REF_UNKNOWN`` before anything reaches the page), then the same
handler runs with that selector — one executor, one set of guards for refs and selectors.
"""

from __future__ import annotations

from typing import Any, Protocol

from playwright.async_api import Page

from browserq.actions.context import StepContext
from browserq.errors import Codes, StepFailed

#: How a step's ``selector`` names a session ref.
REF_PREFIX = "ref="
#: The actions a ref may aim (one element each); ``wait`` and ``extract`` take selectors only.
REF_ACTIONS = frozenset({
    "click", "fill", "type", "select", "check", "uncheck", "press", "hover", "get", "scroll",
    "download", "upload",
})


class RefResolver(Protocol):
    """What resolves a session's refs (:class:`browserq.sessions.RefBook`)."""

    async def target(self, page: Page, ref: str) -> str:
        """The Playwright selector bound to the ref's node; raises REF_STALE / REF_UNKNOWN."""

    async def stale(self, page: Page, ref: str) -> StepFailed | None:
        """REF_STALE when the ref no longer resolves (asked after its action failed)."""


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
