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

import ast
import asyncio
import time
from datetime import UTC, datetime
from typing import Any

from browserq.errors import Codes, StepFailed
from browserq.runner.handoff import Handoff
from browserq.sessions.held import HeldSession, failure_reply
from browserq.templates.handoff import UNTIL_KINDS, HandoffStep


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


def ask_again(held: HeldSession, seen: Any, correlation_id: str, reply_to: str) -> dict[str, Any] | None:
    """A handoff command its lost holder was waiting on (``seen``: its step record, ``unknown``):
    the message that asks the person again here, as a run's handoff is asked again by the worker
    that takes the run over — for what was left of its ``timeout_s``, its reply to the agent's
    waiting command. None when the record is no handoff."""
    inputs = seen.inputs if isinstance(seen.inputs, dict) else {}
    if seen.action != "handoff" or not isinstance(inputs.get("message"), str):
        return None
    held.known.pop(seen.step_id, None)  # asked again, not answered as a redelivery
    started = seen.started_at if seen.started_at.tzinfo else seen.started_at.replace(tzinfo=UTC)
    timeout_s = float(inputs.get("timeout_s") or 0)
    left = timeout_s - (datetime.now(UTC) - started).total_seconds()
    fields: dict[str, Any] = {"message": inputs["message"], "timeout_s": max(1.0, round(left, 1))}
    until = _until_of(inputs.get("until"))
    if until is not None:
        fields["until"] = until
    return {"kind": "command", "action": "handoff", "id": correlation_id, "reply_to": reply_to,
            "session": held.run_id, "fields": fields}


def _until_of(shown: Any) -> dict[str, str] | None:
    """The ``until`` a record shows (``present '#done'``, ``url '**/ok'``) when it can be read
    back whole: a string, no secret masked in it; else None (the person presses Continue)."""
    if not isinstance(shown, str) or "[secret:" in shown:
        return None
    kind, _, value = shown.partition(" ")
    try:
        parsed = ast.literal_eval(value) if kind in UNTIL_KINDS else None
    except (ValueError, SyntaxError):
        return None
    return {kind: parsed} if isinstance(parsed, str) else None


__all__ = ["ask_again", "ask_person", "cut_short", "refused_while_asked"]
