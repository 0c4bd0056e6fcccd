"""The sessions one worker process holds: opened by the ``browserq.open_session`` task, kept on
the process's runtime loop, closed by their client, their idle timeout or their lifetime.

Opening takes the run's lease (fencing token), opens a context with the runner's
:class:`~browserq.runner.context.ContextLease` (from the last checkpoint when another worker held
it before), has this process consume the session's command queue (:mod:`browserq.sessions.routing`),
replies "opened" and returns: the Celery task ends, and an idle session holds one browser context
and no Celery slot. While it is held, the process's one :class:`SessionRenewer` renews its lease
with every other session's (one transaction a tick); a lost lease or a ``browserq cancel`` ends it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from functools import partial
from typing import Any

import structlog

from browserq.errors import Codes, InfrastructureError, StepFailed
from browserq.execute import Runtime
from browserq.execute.finish import lost_too_often
from browserq.execute.liveness import holder_dead
from browserq.execute.run_request import build_request, materialize
from browserq.redact import Redactor
from browserq.runner import RunOutcome, RunRequest
from browserq.session_events import SessionHeld, SessionLetGo, SessionWatchers
from browserq.sessions.asked import ask_again, ask_person, cut_short, refused_while_asked
from browserq.sessions.held import CommandRunner, HeldSession, failure_reply, holder_epoch
from browserq.sessions.refs import RefBook
from browserq.sessions.renewer import SessionRenewer
from browserq.sessions.routing import (
    REPLY_QUEUE_PREFIX,
    CommandConsumer,
    Publisher,
    clock_offset_s,
    command_queue_name,
    too_late,
)
from browserq.sessions.snapshot import Snapshotter
from browserq.sessions.watched import answered_event, show_live
from browserq.store import IdentityBusy, IdentityError, RunAlreadyFinished

log = structlog.get_logger(__name__)

#: How often a held session looks at its idle and lifetime deadlines.
KEEPER_TICK_S = 0.5
#: How long opening a context may take before the open fails.
OPEN_TIMEOUT_S = 60.0
#: ``send(reply, queue)``: publish a reply to a client's reply queue.
Send = Callable[[dict[str, Any], str], None]


class SessionHost:
    """Every session this process holds, by run id; one per worker process."""

    def __init__(self, runtime: Runtime, send: Send, consumer_of: Callable[[SessionHost], CommandConsumer],
                 watchers: SessionWatchers | None = None) -> None:
        self.runtime = runtime
        self.watchers = watchers or SessionWatchers()  # Flower's progress, metrics (browserq.session_events)
        self.settings = runtime.settings
        self.send = send
        self.sessions: dict[str, HeldSession] = {}
        self.clock_offset_s = 0.0  # the database's clock minus this process's, read at each hold
        self.commands = CommandRunner(runtime.runner.attempt, frozenset(self.settings.session_side_effect_actions),
                                      ask=partial(ask_person, runtime.runner.handoff))
        self.renewer = SessionRenewer(runtime.store.leases, self.settings.lease_ttl_s)
        self.consumer = consumer_of(self).start()

    @classmethod
    def for_runtime(cls, runtime: Runtime, watchers: SessionWatchers | None = None) -> SessionHost:
        """A host replying and consuming through the fleet's broker (``BROWSERQ_BROKER_URL``)."""
        url = runtime.settings.broker_url
        publisher = Publisher(url)
        return cls(runtime, publisher.publish, lambda host: CommandConsumer(url, host.received), watchers)

    # --- open (the Celery task's thread) ----------------------------------------------------------
    def open(self, run_id: str, *, reply_to: str | None, correlation_id: str | None) -> str:
        """Hold the session: ``"opened"``, ``"full"`` or ``"ended"`` (the run already ended);
        raises ``LeaseBusy`` when another live worker holds it."""
        if run_id in self.sessions:
            return self._reply_opened(self.sessions[run_id], reply_to, correlation_id)
        if len(self.sessions) >= self.settings.session_max_per_process:
            return self._refuse_full(run_id, reply_to, correlation_id)
        store = self.runtime.store
        self.clock_offset_s = clock_offset_s(store.database.now())  # commands' start windows: the database's clock
        try:
            lease = store.leases.acquire_lease(run_id, owner=self.runtime.owner, ttl_s=self.settings.lease_ttl_s,
                                        holder_dead=holder_dead)
        except RunAlreadyFinished as finished:
            self._reply(reply_to, correlation_id, {"ok": False, "closed": f"the session already ended "
                                                   f"({finished.run.status}: {finished.run.error_message or ''})"})
            return "ended"
        assert lease.run is not None
        if lease.takeovers > self.settings.max_worker_losses:  # a poison session cannot loop for ever
            self.runtime.ends.finish(run_id, lease.token, lost_too_often(run_id, lease.takeovers, "session"), None)
            self._reply(reply_to, correlation_id, {"ok": False, "closed": "its workers kept being lost"})
            return "ended"
        loaded, params, names = materialize(self.runtime.templates, lease.run, None, self.runtime.secret_box)
        run, request = build_request(store, lease, loaded, params, names, checkpoint_box=self.runtime.checkpoint_box,
                                     lease_ttl_s=self.settings.lease_ttl_s)
        try:
            request = self.runtime.identities.lease(request, run)
        except IdentityError as exc:  # exclusive: leased to another live run or session (or unusable)
            return self._identity_refused(request, lease.token, exc, reply_to, correlation_id)
        known = {s.step_id: s for s in store.steps.steps(run_id) if s.step_id} if lease.attempt > 1 else {}
        try:
            held = self.runtime.loop.run(self._open_context(request, known), timeout=OPEN_TIMEOUT_S)
        except Exception as exc:  # no context: the run ends now, its client is told (never a hang)
            return self._open_failed(request, lease.token, exc, reply_to, correlation_id)
        self.sessions[run_id] = held
        self._answer_interrupted(held)
        self.consumer.add(held.queue)  # before "opened": the client's first command finds a consumer
        held.keeper = self.runtime.loop.submit(self._keep(held))
        self.runtime.loop.submit(show_live(self.runtime.runner.live, held))  # browserq live SESSION_ID
        log.info("session opened", run_id=run_id, epoch=held.epoch, takeover=lease.takeover)
        self.watchers.held(SessionHeld(run_id, held.epoch, bool(lease.takeover), time.time()))
        return self._reply_opened(held, reply_to, correlation_id)

    async def _open_context(self, request: RunRequest, known: dict[str, Any]) -> HeldSession:
        runner = self.runtime.runner
        redactor = _redactor_of(request)
        state = runner.new_state(request, redactor)
        try:
            await runner.context.open(state)
            if request.resume is not None:  # another worker held it: its last checkpoint (cookies, storage, URL)
                await runner.recovery.restore(request.resume, state)
        except BaseException:
            await runner.context.drop(state)  # no context left behind
            raise
        idle = float(request.params.get("idle_timeout_s") or self.settings.session_idle_timeout_s)
        life = float(request.params.get("max_lifetime_s") or self.settings.session_max_lifetime_s)
        held = HeldSession(run_id=request.run_id, token=request.token or 0, request=request, state=state,
                           redactor=redactor, queue=command_queue_name(request.run_id),
                           idle_timeout_s=min(idle, self.settings.session_idle_timeout_s),
                           life_deadline=time.monotonic() + min(life, self.settings.session_max_lifetime_s))
        held.refs = RefBook(epoch=holder_epoch(held.token))  # no ref of an earlier holder resolves here
        assert state.browser.page is not None
        held.refs.watch(state.browser.page)
        state.browser.refs = held.refs
        held.snapshots = Snapshotter(held.refs, redactor)
        held.next_path = 1 + max((int(s.step_path) for s in known.values() if s.step_path.isdigit()), default=-1)
        held.known = dict(known)
        return held

    def _open_failed(self, request: RunRequest, token: int, exc: Exception, reply_to: str | None,
                     correlation_id: str | None) -> str:
        code = exc.code if isinstance(exc, StepFailed) else Codes.INTERNAL
        # Recorded and replied: a failure's text may hold a secret (a URL the session opened).
        why = _redactor_of(request).text(f"its browser context could not be opened: {str(exc)[:500]}")
        self.runtime.identities.release(request)
        try:
            self.runtime.ends.finish(request.run_id, token, RunOutcome(request.run_id, "failed", {}, code.code, why),
                                     None)
        finally:
            self._reply(reply_to, correlation_id, {"ok": False, "closed": why})
        log.warning("session not opened", run_id=request.run_id, error=why[:300])
        return "ended"

    def _identity_refused(self, request: RunRequest, token: int, exc: IdentityError, reply_to: str | None,
                          correlation_id: str | None) -> str:
        """An identity is leased to one run or session at a time: a busy one refuses the session
        now, as a full process does (``SessionCapacity(retry_after_s)``, run ``cancelled``
        ``SESSION_CAPACITY``); one that cannot be used at all fails it (``IDENTITY_UNAVAILABLE``)."""
        if not isinstance(exc, IdentityBusy):
            why = f"its identity cannot be used: {exc}"
            outcome = RunOutcome(request.run_id, "failed", {}, Codes.IDENTITY_UNAVAILABLE.code, why)
            body: dict[str, Any] = {"ok": False, "closed": why}
        else:
            why = f"its identity is leased to another run or session: {exc}"
            outcome = RunOutcome(request.run_id, "cancelled", {}, Codes.SESSION_CAPACITY.code, why)
            body = {"ok": False, "capacity": why,
                    "retry_after_s": max(self.settings.session_capacity_retry_s, float(exc.retry_in_s or 0))}
        try:
            self.runtime.ends.finish(request.run_id, token, outcome, None)
        finally:
            self._reply(reply_to, correlation_id, body)
        return "full" if isinstance(exc, IdentityBusy) else "ended"

    def _reply_opened(self, held: HeldSession, reply_to: str | None, correlation_id: str | None) -> str:
        self._reply(reply_to, correlation_id, {"ok": True, "opened": held.run_id, "epoch": held.epoch,
                                               "queue": held.queue})
        return "opened"

    def _refuse_full(self, run_id: str, reply_to: str | None, correlation_id: str | None) -> str:
        why = (f"this worker process holds {len(self.sessions)} sessions, "
               f"BROWSERQ_SESSION_MAX_PER_PROCESS={self.settings.session_max_per_process}")
        self.runtime.store.transitions.transition(run_id, "cancelled", reason=f"no room for the session: {why}",
                                      fields={"error_code": Codes.SESSION_CAPACITY.code, "error_message": why})
        self._reply(reply_to, correlation_id, {"ok": False, "capacity": why,
                                               "retry_after_s": self.settings.session_capacity_retry_s})
        return "full"

    def _reply(self, reply_to: str | None, correlation_id: str | None, body: dict[str, Any]) -> None:
        if reply_to:
            try:
                self.send({**body, "id": correlation_id}, reply_to)
            except Exception as exc:  # the client went away, or the broker: the session's records say it
                log.warning("session reply not sent", reply_to=reply_to, error=str(exc)[:200])

    # --- commands (arrive on the consumer thread, run on the runtime loop) ------------------------
    def received(self, body: dict[str, Any], done: Callable[[], None]) -> None:
        """A message from a session queue: run it on the loop; ack it once it ran."""
        run_id = str(body.get("session", ""))
        future = self.runtime.loop.submit(self._handle(run_id, body))
        future.add_done_callback(lambda _f: done())

    async def _handle(self, run_id: str, body: dict[str, Any]) -> None:
        held = self.sessions.get(run_id)
        reply_to, correlation_id = body.get("reply_to"), str(body.get("id", ""))
        if held is None or held.closing:
            why = held.closing if held is not None else "this worker does not hold the session"
            await self._reply_async(reply_to, correlation_id, {"ok": False, "closed": why})
            return
        if correlation_id in held.seen:
            return  # delivered again (a broker's redelivery): it runs and is answered once
        held.seen.add(correlation_id)
        # A reply is bytes on the broker: the session's secrets leave it masked, as from every record.
        began = time.monotonic()
        reply = held.redactor.data(await self._run(held, body))
        await self._reply_async(reply_to, correlation_id, reply)
        if body.get("kind") != "close":
            held.answered += 1
            self.watchers.answered(answered_event(held, body, reply, time.monotonic() - began))

    def _answer_interrupted(self, held: HeldSession) -> None:
        """Commands the previous holder had started when it was lost (their records ``unknown``):
        their clients are told now, through the reply queue their id names; none runs again."""
        for step_id, seen in list(held.known.items()):
            if seen.status != "unknown" or not step_id.startswith("cmd."):
                continue
            correlation_id = step_id.removeprefix("cmd.")
            reply_hex, _, _ = correlation_id.partition("-")
            body = {"action": seen.action, "side_effect": bool(seen.inputs.get("side_effect"))}
            if reply_hex and (again := ask_again(held, seen, correlation_id, f"{REPLY_QUEUE_PREFIX}{reply_hex}")):
                self.runtime.loop.submit(self._handle(held.run_id, again))  # a person is asked again here
                continue
            held.seen.add(correlation_id)
            if reply_hex:
                self._reply(f"{REPLY_QUEUE_PREFIX}{reply_hex}", correlation_id, self._redelivered(held, body, seen))

    async def _run(self, held: HeldSession, body: dict[str, Any]) -> dict[str, Any]:
        kind = body.get("kind")
        held.busy += 1
        try:
            if (refused := refused_while_asked(held, kind)) is not None:
                return refused  # a person has the page; a close ends their wait first
            if kind == "close":
                await cut_short(held, "closed by its client")
            async with held.lock:
                if held.closing:
                    return {"ok": False, "closed": held.closing}
                if kind == "close":
                    await self._close(held, "completed", None, "closed by its client")
                    return {"ok": True, "closed": "closed by its client"}
                if (seen := held.known.pop(f"cmd.{body.get('id', '')}", None)) is not None:
                    return self._redelivered(held, body, seen)
                if too_late(body, self.clock_offset_s):
                    return self._expired(held, body)
                try:
                    if kind == "batch":
                        return await self.commands.batch(held, body)
                    if kind == "snapshot":
                        return await self.commands.snapshot(held, body)
                    return await self.commands.command(held, body)
                except InfrastructureError as lost:
                    await self._close(held, "failed", lost.code.code, f"its browser was lost: {lost.message}")
                    return {"ok": False, "closed": held.closing}
        finally:
            held.busy -= 1
            held.last_used = time.monotonic()

    def _expired(self, held: HeldSession, body: dict[str, Any]) -> dict[str, Any]:
        """A command that reached the session after its start window: never started, never run
        (its client may have given up on it, and sent it again)."""
        log.warning("session command past its start window: not run", run_id=held.run_id,
                    action=str(body.get("action") or body.get("kind"))[:40], command=str(body.get("id", ""))[:80])
        return failure_reply(StepFailed(Codes.COMMAND_EXPIRED, "it reached the worker holding the session after "
                                        "its start window (a worker lost, or a broker's late redelivery): it was "
                                        "not run; send it again"), held.epoch)

    def _redelivered(self, held: HeldSession, body: dict[str, Any], seen: Any) -> dict[str, Any]:
        """A command the previous holder had started when it was lost: never run again. A write
        (side effect) is OUTCOME_UNKNOWN; a read fails retryable (send it again)."""
        if seen.status == "succeeded":
            return {"ok": True, "output": None, "epoch": held.epoch, "redelivered": True}
        side_effect = bool(body.get("side_effect")) or body.get("action") in self.commands.side_effect_actions
        if side_effect:
            failure = StepFailed(Codes.OUTCOME_UNKNOWN, "the worker holding the session was lost while this "
                                 "side effect ran: it may or may not have happened; it is not run again")
            reply = failure_reply(failure, held.epoch)
        else:
            reply = failure_reply(StepFailed(Codes.WORKER_LOST, "the worker holding the session was lost while "
                                             "this command ran; send it again"), held.epoch)
            reply["error"]["retryable"] = True
        return reply

    async def _reply_async(self, reply_to: Any, correlation_id: Any, body: dict[str, Any]) -> None:
        if isinstance(reply_to, str) and reply_to:
            await asyncio.to_thread(self._reply, reply_to, correlation_id, body)

    # --- lifetime ---------------------------------------------------------------------------------
    async def _keep(self, held: HeldSession) -> None:
        """Have the process's renewer renew the lease, and close the session when it idles out or
        its lifetime ends; a lost lease or a cancel ends it too (the renewer cancels this task)."""
        keeper = asyncio.current_task()
        assert keeper is not None
        self.renewer.hold(held.run_id, held.token, held.state, keeper)
        try:
            while held.closing is None:
                now = time.monotonic()
                if now >= held.life_deadline:
                    await self._close_when_free(held, Codes.SESSION_LIFETIME.code, "its max_lifetime_s ran out")
                elif held.idle_for(now) >= held.idle_timeout_s:
                    await self._close_when_free(held, Codes.SESSION_IDLE.code,
                                                f"no command for its idle_timeout_s ({held.idle_timeout_s:g} s)")
                else:
                    await asyncio.sleep(KEEPER_TICK_S)
        except asyncio.CancelledError:
            keeper.uncancel()
            await self._interrupted(held)
        finally:
            self.renewer.let_go(held.run_id, keeper)

    async def _close_when_free(self, held: HeldSession, code: str, why: str) -> None:
        await cut_short(held, why)  # a person's wait ends: the lifetime, a shutdown
        async with held.lock:
            if held.closing is None:
                await self._close(held, "cancelled", code, why)

    async def _interrupted(self, held: HeldSession) -> None:
        """The renewer stopped the session: lease lost (another worker holds it now: nothing may
        be written, the queue stays for it), cancelled, or the database stayed away."""
        kind, reason = held.state.interrupt.kind, held.state.interrupt.reason
        if kind == "cancel":
            await cut_short(held, f"cancelled: {reason}")  # a person's wait ends first
            await self._close(held, "cancelled", Codes.CANCELLED.code, f"cancelled: {reason}")
            return
        await cut_short(held, f"this worker lost the session ({kind})")
        held.closing = f"this worker lost the session ({kind})"
        await self._let_go(held, delete_queue=False)
        self.watchers.let_go(SessionLetGo(held.run_id, "lost", None, held.closing, held.answered))

    async def _close(self, held: HeldSession, status: str, code: str | None, why: str) -> None:
        """End the session and its run (status and why recorded); its queue goes with it."""
        held.closing = why
        runner = self.runtime.runner
        try:
            await runner.context.save_identity(held.state)
        except Exception as exc:
            log.warning("session identity storage not saved", run_id=held.run_id, error=str(exc)[:200])
        await self._let_go(held, delete_queue=True)
        tail = await held.state.journal.take_tail()
        outcome = RunOutcome(held.run_id, status, dict(held.state.outputs), code, None if code is None else why,
                             journal_tail=tail)
        try:
            await asyncio.to_thread(self.runtime.ends.finish, held.run_id, held.token, outcome, None)
        except Exception as exc:  # fenced out, or the database is away: the sweeper settles the run
            log.warning("session end not recorded", run_id=held.run_id, error=str(exc)[:300])
        self.runtime.identities.release(held.request)
        log.info("session closed", run_id=held.run_id, status=status, why=why)
        self.watchers.let_go(SessionLetGo(held.run_id, status, code, why, held.answered))

    async def _let_go(self, held: HeldSession, *, delete_queue: bool) -> None:
        self.sessions.pop(held.run_id, None)
        await asyncio.to_thread(self.consumer.remove, held.queue, delete=delete_queue)
        try:
            await self.runtime.runner.context.close(held.state)
        except Exception as exc:
            log.warning("session context close failed", run_id=held.run_id, error=str(exc)[:200])

    def stop(self, why: str = "its worker process is stopping") -> None:
        """At process shutdown: close every session (recorded), then the consumer."""
        for held in list(self.sessions.values()):
            try:
                self.runtime.loop.run(self._close_when_free(held, Codes.CANCELLED.code, why), timeout=30)
            except Exception as exc:
                log.warning("session not closed at shutdown", run_id=held.run_id, error=str(exc)[:200])
        self.consumer.stop()


def _redactor_of(request: RunRequest) -> Redactor:
    """The session's redactor: its secret params masked in every record and reply."""
    return Redactor({name: request.params.get(name) for name in request.secret_names})


__all__ = ["SessionHost"]
