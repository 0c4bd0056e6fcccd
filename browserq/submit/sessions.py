"""``open_session()``: a live browser context on the fleet, driven one command at a time.

    from browserq import open_session
    with open_session(allowed_domains=["shop.example"], idle_timeout_s=300) as s:
        s.navigate(url="https://shop.example/login")
        s.fill(selector="#user", value="ada")
        s.get(selector="#welcome", what="text")

A session is a run (``s.id`` is its run id: ``browserq show/report/live`` work on it) of a
synthetic ``session`` template carrying its settings, admitted through the one door like every
run. Opening sends ``browserq.open_session`` to the fleet's queue; commands go to the session's
own queue through the broker and come back on this client's reply queue. A command that fails
raises :class:`CommandFailed` and the session goes on; a session that is gone raises
:class:`SessionClosed`; no room raises :class:`SessionCapacity` — never a hang.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from browserq.execute import check_identity_request, record_run
from browserq.execute.admission import admit
from browserq.sessions.errors import CommandFailed, SessionCapacity, SessionClosed
from browserq.sessions.routing import REPLY_MARGIN_S, clock_offset_s, command_queue_name, start_by
from browserq.sessions.template import SESSION_TEMPLATE, session_template
from browserq.settings import Settings, get_settings
from browserq.submit.freeze import SavedTemplate, freeze_session
from browserq.submit.services import ProducerServices, producer_services
from browserq.submit.session_link import ENDED, SessionLink
from browserq.tasks.app import app
from browserq.tasks.session_task import SESSION_TASK_NAME
from browserq.templates.handoff import DEFAULT_HUMAN_TIMEOUT_S


@dataclass(frozen=True)
class SessionSnapshot:
    """What ``s.snapshot()`` gives: the tree's ``text`` (``[ref=…]`` on each node to act on), the
    ``epoch`` and ``url`` it was taken at, and whether the text budget cut it."""

    text: str
    epoch: int
    url: str
    truncated: bool = False


class Session:
    """An open session: send it commands; close it (or leave the ``with`` block) when done."""

    def __init__(self, run_id: str, link: SessionLink, services: ProducerServices, settings: Settings,
                 step_timeout_s: float, clock_offset_s: float = 0.0) -> None:
        self.id = run_id
        self._clock_offset_s = clock_offset_s  # the database's clock minus ours: commands' start windows
        self.epoch: int | None = None
        self._link, self._services, self._settings = link, services, settings
        self._queue = command_queue_name(run_id)
        self._step_timeout_s = step_timeout_s
        self.closed: str | None = None
        self._last_id = ""
        self._answered: list[str] = []  # the step ids of the commands that worked (save_template waits for them)

    # --- commands ------------------------------------------------------------------------------
    def do(self, action: str, *, side_effect: bool = False, **fields: Any) -> Any:
        """Any template action by name, with its fields; returns the step's output."""
        default = DEFAULT_HUMAN_TIMEOUT_S if action == "handoff" else self._step_timeout_s  # a person takes minutes
        reply = self._request({"kind": "command", "action": action, "fields": fields, "side_effect": side_effect},
                              _timeout_of(fields, default))
        self._answered.append(f"cmd.{self._last_id}"[:100])
        return reply.get("output")

    def navigate(self, url: str, **fields: Any) -> Any:
        return self.do("navigate", url=url, **fields)

    def click(self, **fields: Any) -> Any:
        return self.do("click", **fields)

    def fill(self, **fields: Any) -> Any:
        return self.do("fill", **fields)

    def get(self, **fields: Any) -> Any:
        return self.do("get", **fields)

    def press(self, **fields: Any) -> Any:
        return self.do("press", **fields)

    def handoff(self, message: str, *, until: Mapping[str, Any] | None = None,
                timeout_s: float = DEFAULT_HUMAN_TIMEOUT_S) -> Any:
        """Ask a person to take the page over (the template's ``handoff`` action): the session's run
        waits for a person, ``browserq live SESSION_ID`` gives them the page with input, and this
        returns what they did (``{"outcome": "continued" | "condition", "waited_s", "inputs"}``) once
        they press Continue (or ``until`` holds); ``CommandFailed`` ``HUMAN_TIMEOUT`` after
        ``timeout_s``, ``HUMAN_GAVE_UP`` if they give up. The session goes on either way."""
        fields: dict[str, Any] = {"message": message, "timeout_s": timeout_s}
        if until is not None:
            fields["until"] = dict(until)
        return self.do("handoff", **fields)

    def snapshot(self, *, interactive: bool = False, budget: int | None = None) -> SessionSnapshot:
        """The page's accessibility tree as text with a ref on each node to act on
        (``s.click(ref="e…")``); ``epoch``: refs from another epoch are REF_STALE."""
        body: dict[str, Any] = {"kind": "snapshot", "interactive": interactive}
        if budget is not None:
            body["budget"] = budget
        out = self._request(body, self._step_timeout_s)["output"]
        return SessionSnapshot(str(out["text"]), int(out["epoch"]), str(out["url"]), bool(out.get("truncated")))

    def steps(self, steps: list[Mapping[str, Any]], *, stop_on_error: bool = True, timeout_s: float = 60.0) -> list[Any]:
        """A batch with one time budget; returns each step's output. A failed step raises
        :class:`CommandFailed` (``results``: every reply so far)."""
        reply = self._request({"kind": "batch", "steps": [dict(s) for s in steps], "stop_on_error": stop_on_error,
                               "timeout_s": timeout_s}, timeout_s)
        results = reply.get("results") or []
        self._answered += [f"cmd.{self._last_id}.{i}"[:100] for i, r in enumerate(results) if r.get("ok")]
        for result in results:
            if not result.get("ok"):
                failed = _failure(result)
                failed.results = results  # type: ignore[attr-defined]  # our own exception, just made
                raise failed
        return [r.get("output") for r in results]

    def save_template(self, name: str, version: str, params: Mapping[str, Any] | None = None) -> SavedTemplate:
        """Freeze what this session did into template ``name@version`` in BROWSERQ_TEMPLATES_DIR:
        its successful commands in order, each ref as the locator captured for its node, a value
        equal to a param's as ``${param}`` (a :class:`~browserq.secrets.Secret` is never written),
        what the agent read as outputs. Open or closed; ``docs/sessions.md`` says what is kept."""
        return freeze_session(self._services.store, self._settings, self.id, name, version, params, self._answered)

    def close(self) -> None:
        """Close the session (its run ends completed); closing twice is a no-op."""
        if self.closed is not None:
            return
        try:
            self._request({"kind": "close"}, self._step_timeout_s)
        except (SessionClosed, CommandFailed):  # gone already, or its worker is lost: it idles out
            pass
        finally:
            self.closed = "closed by its client"
            self._link.close()

    def __enter__(self) -> Session:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    # --- plumbing -------------------------------------------------------------------------------
    def _request(self, body: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        if self.closed is not None:
            raise SessionClosed(self.closed, session_id=self.id)
        window = {} if body["kind"] == "close" else {"start_by": start_by(self._clock_offset_s)}
        correlation_id = self._last_id = self._link.send(self._queue, {**body, **window, "session": self.id})
        try:
            reply = self._link.wait(correlation_id, timeout_s + REPLY_MARGIN_S, self._why_ended, self.id)
        except SessionClosed as gone:
            self.closed = gone.why
            raise
        if reply is None:  # the session is still open (else SessionClosed came): its worker may be lost
            raise self._no_reply(body, timeout_s + REPLY_MARGIN_S)
        self.epoch = reply.get("epoch", self.epoch)
        if reply.get("closed") and body["kind"] != "close":
            self.closed = str(reply["closed"])
            raise SessionClosed(self.closed, session_id=self.id)
        if not reply.get("ok") and "error" in reply:
            raise _failure(reply)
        return reply

    def _no_reply(self, body: dict[str, Any], waited_s: float) -> CommandFailed:
        """No reply in time. Past its start window the command never starts (``START_WINDOW_S``), so
        a read may be sent again; a write may have happened before its worker was lost."""
        lost = (f"no reply within {waited_s:g} s: the worker holding the session may be lost (another takes it "
                "over when its lease expires)")
        writes = set(self._settings.session_side_effect_actions)
        commands = body.get("steps") if body["kind"] == "batch" else [body]
        if any(c.get("side_effect") or c.get("action") in writes for c in commands or ()):
            return CommandFailed("OUTCOME_UNKNOWN", f"{lost}; this side effect may or may not have happened, and "
                                 "it will not run now: check before sending it again", epoch=self.epoch)
        return CommandFailed("WORKER_LOST", f"{lost}; the command will not run now: send it again",
                             retryable=True, epoch=self.epoch)

    def _why_ended(self) -> str | None:
        run = self._services.store.runs.get_run(self.id)
        if run is None or run.status in ENDED:
            return f"its run is {run.status if run else 'gone'}: {(run.error_message if run else '') or ''}".rstrip(": ")
        return None


class AsyncSession:
    """The asyncio twin of :class:`Session`: the same commands, awaited (run off the loop)."""

    def __init__(self, session: Session) -> None:
        self.sync = session
        self.id = session.id
        self._lock = asyncio.Lock()  # one request at a time on the session's connection

    async def _call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        async with self._lock:
            return await asyncio.to_thread(getattr(self.sync, name), *args, **kwargs)

    async def do(self, action: str, **fields: Any) -> Any:
        return await self._call("do", action, **fields)

    async def navigate(self, url: str, **fields: Any) -> Any:
        return await self._call("navigate", url, **fields)

    async def click(self, **fields: Any) -> Any:
        return await self._call("click", **fields)

    async def fill(self, **fields: Any) -> Any:
        return await self._call("fill", **fields)

    async def get(self, **fields: Any) -> Any:
        return await self._call("get", **fields)

    async def press(self, **fields: Any) -> Any:
        return await self._call("press", **fields)

    async def handoff(self, message: str, **options: Any) -> Any:
        return await self._call("handoff", message, **options)

    async def snapshot(self, **options: Any) -> SessionSnapshot:
        return await self._call("snapshot", **options)

    async def steps(self, steps: list[Mapping[str, Any]], **options: Any) -> list[Any]:
        return await self._call("steps", steps, **options)

    async def save_template(self, name: str, version: str, params: Mapping[str, Any] | None = None) -> SavedTemplate:
        return await self._call("save_template", name, version, params)

    async def close(self) -> None:
        await self._call("close")

    async def __aenter__(self) -> AsyncSession:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


def open_session(
    *, allowed_domains: list[str] | None = None, identity: str | None = None, identity_pool: str | None = None,
    tenant: str | None = None, idle_timeout_s: float | None = None, max_lifetime_s: float | None = None,
    settings: Mapping[str, Any] | None = None, secrets: Mapping[str, Any] | None = None,
    open_timeout_s: float | None = None,
) -> Session:
    """Open a session on the fleet and return it once a worker holds it.

    ``settings``: any template setting (stealth, rate limits, step_timeout_s, network…);
    ``secrets``: values commands may use as ``${name}``, masked in every record."""
    config, services = get_settings(), producer_services()
    _check_fleet_room(config, services)
    tsettings = {**(settings or {}), **({"allowed_domains": allowed_domains} if allowed_domains else {})}
    loaded = session_template(tsettings, (secrets or {}).keys(), config.session_max_lifetime_s,
                              max_selector_length=config.max_selector_length, max_repeat=config.max_repeat)
    params = {**(secrets or {}), "idle_timeout_s": idle_timeout_s, "max_lifetime_s": max_lifetime_s}
    admission = admit(config, loaded, {k: v for k, v in params.items() if v is not None},
                      registry=services.registry, identity=identity, identity_pool=identity_pool, tenant=tenant)
    check_identity_request(services.store, services.secret_box, identity, identity_pool)
    prepared = admission.prepared
    box = services.secret_box if services.secret_box.enabled else None
    record_run(services.store, prepared, secret_box=box, task_id=prepared.run_id, queue=config.queue, identity=identity,
               identity_pool=identity_pool, tenant=tenant, enqueued=True, notify_url=admission.notify_url)
    link = SessionLink(config.broker_url)
    try:
        return _wait_opened(prepared.run_id, link, services, config, loaded.template.settings.step_timeout_s,
                            open_timeout_s or config.session_open_timeout_s)
    except BaseException:
        link.close()
        raise


def _wait_opened(run_id: str, link: SessionLink, services: ProducerServices, config: Settings,
                 step_timeout_s: float, open_timeout_s: float) -> Session:
    session = Session(run_id, link, services, config, step_timeout_s,
                      clock_offset_s(services.store.database.now()))
    correlation_id = f"open-{run_id}"
    app.send_task(SESSION_TASK_NAME, kwargs={"run_id": run_id, "reply_to": link.queue.name,
                                             "correlation_id": correlation_id}, queue=config.queue,
                  task_id=run_id)  # the session's task is its run id: AsyncResult(s.id), Flower
    reply = link.wait(correlation_id, open_timeout_s, session._why_ended, run_id)
    if reply is None:
        services.store.cancellation.request_cancel(run_id, reason=f"no worker took the session within {open_timeout_s:g} s")
        raise SessionCapacity(f"no worker process took session {run_id} within {open_timeout_s:g} s "
                              "(every one busy or full)", retry_after_s=config.session_capacity_retry_s)
    if reply.get("capacity"):
        raise SessionCapacity(str(reply["capacity"]), retry_after_s=float(reply.get("retry_after_s") or
                                                                           config.session_capacity_retry_s))
    if not reply.get("ok"):
        raise SessionClosed(str(reply.get("closed") or reply.get("error")), session_id=run_id)
    session.epoch = reply.get("epoch")
    return session


def _check_fleet_room(config: Settings, services: ProducerServices) -> None:
    """``BROWSERQ_SESSION_MAX_PER_FLEET``: the sessions queued or running now, counted."""
    cap = config.session_max_per_fleet
    if not cap:
        return
    store = services.store
    open_now = sum(len(store.runs.list_runs(limit=cap + 1, status=status, template=SESSION_TEMPLATE))
                   for status in ("queued", "running"))
    if open_now >= cap:
        raise SessionCapacity(f"the fleet holds {open_now} sessions, BROWSERQ_SESSION_MAX_PER_FLEET={cap}",
                              retry_after_s=config.session_capacity_retry_s)


async def open_session_async(**options: Any) -> AsyncSession:
    """The asyncio twin of :func:`open_session`."""
    return AsyncSession(await asyncio.to_thread(open_session, **options))


def _timeout_of(fields: Mapping[str, Any], default: float) -> float:
    own = fields.get("timeout_s")
    return float(own) if isinstance(own, int | float) and not isinstance(own, bool) else default


def _failure(reply: Mapping[str, Any]) -> CommandFailed:
    error = reply.get("error") or {}
    return CommandFailed(str(error.get("code", "INTERNAL")), str(error.get("message", "")),
                         retryable=bool(error.get("retryable")), epoch=reply.get("epoch"))


__all__ = ["AsyncSession", "SavedTemplate", "Session", "SessionSnapshot", "open_session", "open_session_async"]
