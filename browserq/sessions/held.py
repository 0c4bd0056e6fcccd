"""One session held by this process: its run's open context, and its commands run one at a time
through the runner's one-step executor (:class:`browserq.runner.attempt.StepAttempt`).

A command IS a step: built by the step models of the template language (same validation), run by
the same executor (same guards, redaction, retries, checkpoints, evidence) and recorded the same
way, as a step attempt of the session's run under path ``0``, ``1``, … (its step id is the
command's id, so a command delivered again after a worker loss finds its own record). A command
sent with ``side_effect=True``, or whose action ``BROWSERQ_SESSION_SIDE_EFFECT_ACTIONS`` names, is
written ahead before it is dispatched, as a template's side-effect step is.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from browserq.errors import Codes, InfrastructureError, StepFailed
from browserq.redact import Redactor
from browserq.redact import active as active_redactor
from browserq.runner import RunRequest, StepOutcome
from browserq.runner.attempt import StepAttempt
from browserq.runner.state import RunState
from browserq.sessions.commands import NOT_COMMANDS
from browserq.sessions.commands import command_step as build_step
from browserq.sessions.refs import RefBook
from browserq.sessions.snapshot import Snapshotter
from browserq.templates import ACTIONS, ActionStep
from browserq.templates.handoff import HandoffStep

#: Where a command's output goes when its action wants an ``into:`` and the client gave none: it
#: is replied, then dropped from the run's outputs (a client's own ``into`` keeps it there).
COMMAND_OUTPUT = "command_output"


@dataclass
class HeldSession:
    """What this process knows of a session it holds (the rest is in its run's records)."""

    run_id: str
    token: int  # the lease's fencing token (a new holder's is higher)
    request: RunRequest
    state: RunState
    redactor: Redactor
    queue: str
    idle_timeout_s: float
    life_deadline: float  # time.monotonic() when it must close, busy or not
    next_path: int = 0
    last_used: float = field(default_factory=time.monotonic)
    busy: int = 0
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    closing: str | None = None  # why it is closing, once it is
    keeper: Any = None  # the future of its keeper on the runtime loop
    refs: RefBook | None = None  # the refs its snapshots issued (their epoch is the session's)
    snapshots: Snapshotter | None = None
    #: Command step records a previous holder left (by step id): a command delivered again is
    #: answered from them, never run twice.
    known: dict[str, Any] = field(default_factory=dict)
    #: Command ids running or answered here: a second delivery of one is never run or answered again.
    seen: set[str] = field(default_factory=set)
    #: Messages (commands, batches, snapshots) this holder answered: its watchers' count.
    answered: int = 0
    #: The running ``handoff`` command's wait while a person has the page (browserq.sessions.asked).
    waiting: asyncio.Future[Any] | None = None

    @property
    def epoch(self) -> int:
        """The session's epoch: its refs' (main-frame navigations, tab switches), started by each
        holder above every epoch an earlier holder can have reached (see :func:`holder_epoch`)."""
        return self.refs.epoch if self.refs is not None else holder_epoch(self.token)

    def idle_for(self, now: float) -> float:
        return 0.0 if self.busy else now - self.last_used


def command_step(action: Any, fields: dict[str, Any], *, command_id: str, side_effect: bool) -> ActionStep:
    """The step a command stands for, built by the session's command builder
    (:func:`browserq.sessions.commands.command_step`: the template language's step models, a
    ``ref=`` aimed at a snapshot's node); ``INVALID_STEP_INPUT`` / ``REF_UNKNOWN`` when it is no
    valid step. The command's id becomes the step's id; an action that wants ``into:`` gets one."""
    step_class = ACTIONS.get(action) if isinstance(action, str) and action not in NOT_COMMANDS else None
    if step_class is None:
        known = ", ".join(sorted(set(ACTIONS) - NOT_COMMANDS))
        raise StepFailed(Codes.INVALID_STEP_INPUT, f"unknown action {action!r}; one of: {known}")
    values = {**fields, "id": command_id}
    into = step_class.model_fields.get("into")
    if into is not None and into.is_required() and "into" not in fields:
        values["into"] = COMMAND_OUTPUT
    if side_effect:
        values["side_effect"] = True
    ref = values.pop("ref", None)
    return build_step(action, ref=None if ref is None else str(ref), **values)


#: Epochs one holder may go through before the next holder's range: a takeover's epoch is above
#: every epoch of the holders before it, so a ref of theirs can never name a node of the new one.
EPOCHS_PER_HOLDER = 1_000_000


def holder_epoch(token: int) -> int:
    """The first epoch of the holder with lease ``token`` (tokens only grow)."""
    return token * EPOCHS_PER_HOLDER


def failure_reply(failure: StepFailed, epoch: int) -> dict[str, Any]:
    code = failure.code
    return {"ok": False, "epoch": epoch,
            "error": {"code": code.code, "message": failure.message, "retryable": code.retryable}}


#: ``ask(held, step, path)``: a ``handoff`` command's wait for a person → its reply.
Ask = Callable[[HeldSession, HandoffStep, str], Awaitable[dict[str, Any]]]


class CommandRunner:
    """Runs a held session's commands on its open context, one at a time, through ``attempt``;
    a ``handoff`` command through ``ask`` (:func:`browserq.sessions.asked.ask_person`)."""

    def __init__(self, attempt: StepAttempt, side_effect_actions: frozenset[str], ask: Ask | None = None) -> None:
        self.attempt = attempt
        self.side_effect_actions = side_effect_actions
        self.ask = ask

    async def command(self, held: HeldSession, message: dict[str, Any], deadline: float | None = None) -> dict[str, Any]:
        """One command: ``{"action", "fields", "side_effect"}`` → ``{"ok", "output" | "error", "epoch"}``.
        Raises :class:`InfrastructureError` when the browser itself is gone (the session ends)."""
        action, fields = message.get("action"), dict(message.get("fields") or {})
        command_id = f"cmd.{message.get('id', '')}"[:100]
        side_effect = bool(message.get("side_effect")) or action in self.side_effect_actions
        try:
            step = command_step(action, fields, command_id=command_id, side_effect=side_effect)
        except StepFailed as refused:
            return failure_reply(refused, held.epoch)
        if isinstance(step, HandoffStep) and self.ask is None:
            return failure_reply(StepFailed(Codes.INVALID_STEP_INPUT, "this session takes no handoff"), held.epoch)
        path = str(held.next_path)
        held.next_path += 1
        state = held.state
        life = state.deadline
        if deadline is not None:  # a batch: every step's timeout is cut to what is left of it
            state.deadline = min(life, deadline)
        try:
            with active_redactor(held.redactor):
                if isinstance(step, HandoffStep) and self.ask is not None:
                    return await self.ask(held, step, path)
                result = await self.attempt.run(step, path, state)
        finally:
            state.deadline = life
            state.outputs.pop(COMMAND_OUTPUT, None)
            state.failed.record, state.failed.path = None, None  # a failed command does not end the run
        if result.failure is not None and isinstance(result.failure, InfrastructureError):
            raise result.failure
        if result.outcome is StepOutcome.NEEDS_REVIEW:
            return failure_reply(StepFailed(Codes.OUTCOME_UNKNOWN, str(result.failure)), held.epoch)
        if result.outcome in (StepOutcome.FAILED, StepOutcome.CONTINUED) and result.failure is not None:
            return failure_reply(result.failure, held.epoch)
        return {"ok": True, "output": result.output, "epoch": held.epoch}

    async def batch(self, held: HeldSession, message: dict[str, Any]) -> dict[str, Any]:
        """``{"steps": [{action, …}], "stop_on_error", "timeout_s"}``: the steps in order under one
        time budget; the reply lists each one's result (those not run are absent)."""
        steps = message.get("steps") or []
        timeout_s = float(message.get("timeout_s") or 60.0)
        stop_on_error = message.get("stop_on_error", True)
        deadline = time.monotonic() + timeout_s
        results: list[dict[str, Any]] = []
        for index, raw in enumerate(steps):
            if time.monotonic() >= deadline:
                results.append(failure_reply(StepFailed(Codes.TIMEOUT, f"the batch's timeout_s of {timeout_s:g} s "
                                                        f"ran out before step {index}"), held.epoch))
                break
            raw = dict(raw) if isinstance(raw, dict) else {}
            one = {"id": f"{message.get('id', '')}.{index}", "action": raw.pop("action", None),
                   "side_effect": raw.pop("side_effect", False), "fields": raw}
            reply = await self.command(held, one, deadline)
            results.append(reply)
            if not reply["ok"] and stop_on_error:
                break
        return {"ok": all(r["ok"] for r in results), "results": results, "epoch": held.epoch}

    async def snapshot(self, held: HeldSession, message: dict[str, Any]) -> dict[str, Any]:
        """The page's accessibility tree with refs: ``{text, epoch, url, truncated}``."""
        assert held.snapshots is not None and held.state.browser.page is not None
        options: dict[str, Any] = {"interactive": bool(message.get("interactive"))}
        if isinstance(message.get("budget"), int):
            options["budget"] = message["budget"]
        try:
            with active_redactor(held.redactor):
                snap = await held.snapshots.take(held.state.browser.page, **options)
        except StepFailed as failed:
            if isinstance(failed, InfrastructureError):
                raise
            return failure_reply(failed, held.epoch)
        held.last_used = time.monotonic()
        return {"ok": True, "epoch": snap.epoch, "output": {
            "text": snap.text, "epoch": snap.epoch, "url": snap.url, "truncated": snap.truncated}}


__all__ = ["NOT_COMMANDS", "CommandRunner", "HeldSession", "command_step", "failure_reply"]
