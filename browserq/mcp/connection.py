"""One MCP connection, one agent session: opened on the first tool call, closed with the
connection (or by its own idle timeout on the worker), and every tool call answered as a result.

A failed command is a tool result with ``isError`` that names the code and what to do next; the
session stays open. A session that is gone (closed, idled out) is forgotten: the next call opens
a new one, and the error says so.
"""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import mcp_types as types

from browserq.errors import BrowserqError
from browserq.mcp.commands import Step, ToolInputError, steps_for
from browserq.sessions.errors import CommandFailed, SessionCapacity, SessionClosed

#: What to do next, by a failed command's code.
NEXT_STEP = {
    "REF_STALE": "take a new snapshot (browser_snapshot) and use a ref from it",
    "REF_UNKNOWN": "use a ref shown by the latest browser_snapshot",
    "SELECTOR_NOT_FOUND": "take a snapshot to see the page; the element may not be there (yet: browser_wait_for)",
    "TIMEOUT": "take a snapshot to see the page; the element may be hidden or disabled",
    "ELEMENT_NOT_ACTIONABLE": "take a snapshot: the element is there but cannot take this action",
    "INVALID_STEP_INPUT": "fix the arguments as the message says",
    "DOMAIN_DENIED": "this server's sessions may only visit their allowed_domains",
    "URL_DENIED": "use an http(s) URL inside the allowed_domains",
    "OUTCOME_UNKNOWN": "check the page (browser_snapshot) before doing it again: it may have happened",
    "WORKER_LOST": "send the call again",
    "EVAL_DISABLED": "this server's sessions do not allow eval",
    "NAVIGATION_FAILED": "take a snapshot to see where the page is",
}
DEFAULT_NEXT = "take a snapshot (browser_snapshot) to see where the page is"


class AgentSession(Protocol):
    """What a connection needs of a session (:class:`browserq.submit.sessions.AsyncSession`)."""

    id: str

    async def do(self, action: str, **fields: Any) -> Any: ...

    async def steps(self, steps: list[Any], **options: Any) -> list[Any]: ...

    async def snapshot(self, **options: Any) -> Any: ...

    async def close(self) -> None: ...

    async def save_template(self, name: str, version: str, params: Mapping[str, Any] | None = None) -> Any: ...


#: Opens a session with these options (``open_session_async``'s keywords).
Opener = Callable[..., Awaitable[AgentSession]]
#: Reads an artifact's bytes by its path (a screenshot's image).
ArtifactReader = Callable[[str], bytes]


@dataclass(frozen=True)
class SessionOptions:
    """How this server's sessions are opened (its flags and settings)."""

    allowed_domains: list[str] | None = None
    identity: str | None = None
    identity_pool: str | None = None
    idle_timeout_s: float | None = None
    max_lifetime_s: float | None = None
    settings: Mapping[str, Any] = field(default_factory=dict)
    #: ``--secrets``: values an agent types by reference (``${NAME}``), masked in every record and
    #: never shown to the agent; a frozen template takes them as secret params.
    secrets: Mapping[str, str] = field(default_factory=dict)

    def open_kwargs(self, tenant: str | None) -> dict[str, Any]:
        return {"allowed_domains": self.allowed_domains, "identity": self.identity, "identity_pool": self.identity_pool,
                "tenant": tenant, "idle_timeout_s": self.idle_timeout_s, "max_lifetime_s": self.max_lifetime_s,
                "settings": dict(self.settings), "secrets": dict(self.secrets) or None}


def text_result(text: str, *, error: bool = False, structured: Any = None) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=text)], is_error=error, structured_content=structured)


def failure_result(exc: CommandFailed) -> types.CallToolResult:
    next_step = NEXT_STEP.get(exc.code, DEFAULT_NEXT)
    return text_result(f"{exc.code}: {exc.message}\nWhat to do: {next_step}. The session is still open.",
                       error=True, structured={"code": exc.code, "retryable": exc.retryable, "epoch": exc.epoch})


def _shown(output: Any) -> str:
    return "done" if output is None else json.dumps(output, ensure_ascii=False, default=str)


class AgentConnection:
    """The session of one MCP connection; every call runs under its lock, one at a time."""

    def __init__(self, options: SessionOptions, opener: Opener, read_artifact: ArtifactReader, *,
                 tenant: str | None = None) -> None:
        self.options, self.tenant = options, tenant
        self._open, self._read_artifact = opener, read_artifact
        self.session: AgentSession | None = None
        self._lock = asyncio.Lock()
        self._dialog: dict[str, Any] | None = None  # browser_handle_dialog's answer for the next command

    async def call(self, tool: str, args: Mapping[str, Any]) -> types.CallToolResult:
        async with self._lock:
            try:
                return await self._call(tool, args)
            except ToolInputError as exc:
                return text_result(f"INVALID_ARGUMENTS: {tool}: {exc}", error=True)
            except CommandFailed as exc:
                return failure_result(exc)
            except SessionClosed as exc:
                self.session = None
                return text_result(f"SESSION_CLOSED: {exc.why}. Its page and cookies are gone; the next call "
                                   "opens a new session.", error=True)
            except SessionCapacity as exc:
                return text_result(f"SESSION_CAPACITY: {exc}. No session is open; call again after "
                                   f"{exc.retry_after_s:g} s.", error=True)
            except BrowserqError as exc:  # the session could not be opened: its settings, a limit
                code = getattr(getattr(exc, "code", None), "value", None) or type(exc).__name__
                return text_result(f"{code}: {exc}", error=True)

    async def _call(self, tool: str, args: Mapping[str, Any]) -> types.CallToolResult:
        if tool == "browser_handle_dialog":
            self._dialog = {"accept": bool(args["accept"])}
            if args.get("promptText") is not None and args["accept"]:
                self._dialog["prompt"] = args["promptText"]
            return text_result(f"the dialogs the next call opens will be {'accepted' if args['accept'] else 'dismissed'}")
        if tool == "browser_close":
            await self.close()
            return text_result("session closed; the next call opens a new one")
        session = await self._session()
        if tool == "browser_snapshot":
            snap = await session.snapshot(interactive=bool(args.get("interactive")), budget=args.get("budget"))
            head = f"Page URL: {snap.url}\nEpoch: {snap.epoch}{' (cut by its budget)' if snap.truncated else ''}\n"
            return text_result(head + snap.text, structured={"url": snap.url, "epoch": snap.epoch})
        if tool == "session_save_template":
            return await self._save(session, args)
        outputs = await self._commands(session, steps_for(tool, args))
        if tool == "browser_take_screenshot":
            data = self._read_artifact(str(outputs[-1]["artifact"]))
            return types.CallToolResult(content=[types.ImageContent(data=base64.b64encode(data).decode(),
                                                                    mime_type="image/png")])
        last = outputs[-1] if outputs else None
        return text_result(_shown(last), structured={"output": last})

    async def _commands(self, session: AgentSession, steps: list[Step]) -> list[Any]:
        if self._dialog is not None:
            steps = [{**step, "dialog": self._dialog} for step in steps]
            self._dialog = None
        if len(steps) == 1:
            fields = dict(steps[0])
            return [await session.do(fields.pop("action"), **fields)]
        return await session.steps(steps, stop_on_error=True)

    async def _save(self, session: AgentSession, args: Mapping[str, Any]) -> types.CallToolResult:
        from browserq.secrets import Secret

        # the server's secrets are the template's secret params (by reference: their values are never written)
        params = {name: Secret(value) for name, value in self.options.secrets.items()}
        kwargs = {"name": args["name"], "version": args["version"], "params": {**(args.get("params") or {}), **params}}
        saved = await session.save_template(**kwargs)
        return text_result(f"saved {saved.ref} at {saved.path}:\n{saved.text}",
                           structured={"ref": saved.ref, "path": str(saved.path), "text": saved.text})

    async def _session(self) -> AgentSession:
        if self.session is None:
            self.session = await self._open(**self.options.open_kwargs(self.tenant))
        return self.session

    async def close(self) -> None:
        """Close the session, if one is open (the connection ended, or browser_close)."""
        session, self.session = self.session, None
        if session is not None:
            await session.close()


__all__ = ["AgentConnection", "AgentSession", "SessionOptions", "failure_result", "text_result"]
