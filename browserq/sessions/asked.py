"""A session's ``handoff`` command: the agent asks a person to take the page over.

``s.handoff(message="Solve the captcha", until=..., timeout_s=...)`` (or ``s.do("handoff", …)``) is
the template's ``handoff`` step, run by the runner's one wait for a person
(:meth:`browserq.runner.handoff.Handoff.ask`): the session's run goes ``waiting_for_human`` (a
``store.handoffs`` row, the ``waiting_for_human`` webhook), ``browserq live SESSION_ID`` gives a
person the live view of the session's page *with* input, and the command returns what the person
did (``{"outcome": "continued" | "condition", "waited_s", "inputs"}``) — or fails
``HUMAN_TIMEOUT`` / ``HUMAN_GAVE_UP`` as the step does. Either way the run goes back to
``running`` and the session goes on.

While a person has the page, the session's other commands are refused at once with
``SESSION_WAITING_FOR_HUMAN`` (retryable: nothing ran); ``close`` ends the wait and closes. The
idle timeout does not run during a wait (a command is in progress); the max lifetime does: it, a
``browserq cancel``, the worker stopping or the lease lost cut the wait short (recorded as for a
run's wait) and the command answers that the session closed.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from browserq.errors import Codes, StepFailed
from browserq.runner.handoff import Handoff
from browserq.sessions.held import HeldSession, failure_reply
from browserq.templates.handoff import HandoffStep


async def ask_person(handoff: Handoff, held: HeldSession, step: HandoffStep, path: str) -> dict[str, Any]:
    """Run the handoff command ``step`` on the held session; the reply."""
    state = held.state
    # The wait gives its time back to the session's deadline, not to a run's timeout_s.
    state.human.base_deadline = state.deadline - state.human.waited_s
    budget_s = max(0.0, held.life_deadline - time.monotonic())
    wait = asyncio.ensure_future(handoff.ask(step, path, state, budget_s=budget_s))
    held.waiting = wait
    try:
        output = await wait
    except StepFailed as failed:  # HUMAN_TIMEOUT, HUMAN_GAVE_UP: the session goes on
        return failure_reply(failed, held.epoch)
    except asyncio.CancelledError:
        task = asyncio.current_task()
        if task is not None and task.cancelling():
            raise  # this command itself was cancelled (the loop is stopping)
        why = state.interrupt.reason or "the session was closed while a person had its page"
        return {"ok": False, "closed": why}
    finally:
        held.waiting = None
    return {"ok": True, "output": output, "epoch": held.epoch}


def refused_while_asked(held: HeldSession, kind: Any) -> dict[str, Any] | None:
    """The reply to a message that arrives while a person has the page (None: run it). A ``close``
    is let through (the caller cuts the wait short first, see :func:`cut_short`)."""
    if held.waiting is None or kind == "close":
        return None
    failure = StepFailed(Codes.SESSION_WAITING_FOR_HUMAN,
                         "a person has the session's page (a handoff is waiting for them): nothing was run; "
                         "send it again once the handoff command returned")
    return failure_reply(failure, held.epoch)


async def cut_short(held: HeldSession, why: str) -> None:
    """End a person's wait on the session now (closing it, its lifetime out, a cancel, its worker
    stopping or its lease lost), and wait until the wait recorded that; no-op when none is on."""
    wait = held.waiting
    if wait is None or wait.done():
        return
    interrupt = held.state.interrupt
    if interrupt.kind not in ("lease_lost", "store_unavailable"):  # those write nothing more
        interrupt.kind = "cancel"
    interrupt.reason = why
    wait.cancel()
    await asyncio.wait([wait])


__all__ = ["ask_person", "cut_short", "refused_while_asked"]
