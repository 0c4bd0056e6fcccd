"""Helpers of the MCP server's tests: ``browserq mcp`` started as a real process (stdio or HTTP)
against a real worker (``tests.sessions.session_fixtures``), driven by the SDK's own client."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from tests.conftest import REPO
from tests.sessions.session_fixtures import Fleet, session_fleet
from tests.support.http import free_port
from tests.support.polling import wait_until
from tests.support.processes import stop
from tests.support.workers import read_log, spawn_logged

#: The files in the MCP fleet's BROWSERQ_UPLOADS_DIR (``browser_file_upload``).
UPLOADS = {"note.txt": "uploaded through MCP"}
#: A file next to that directory, outside it: an upload of ``../outside.txt`` is refused, and so is
#: one of :data:`LINK_OUT` (a symlink in the directory to that file).
OUTSIDE = "outside.txt"
LINK_OUT = "link-out.txt"

#: ``browserq mcp`` with this interpreter (this checkout's browserq).
MCP = (sys.executable, "-m", "browserq.cli", "mcp")
#: The flags every test server runs with: commands fail fast.
FLAGS = ("--step-timeout", "10")


@pytest.fixture(name="mcp_fleet", scope="module")
def mcp_fleet_fixture(tmp_path_factory: pytest.TempPathFactory, pg_url: str) -> Iterator[Fleet]:
    """One worker process (-c 1) on Redis whose BROWSERQ_UPLOADS_DIR holds :data:`UPLOADS`."""
    tmp = tmp_path_factory.mktemp("mcp-redis")
    uploads = tmp / "uploads"
    uploads.mkdir()
    for name, content in UPLOADS.items():
        (uploads / name).write_text(content)
    (tmp / OUTSIDE).write_text("not for uploading")
    (uploads / LINK_OUT).symlink_to(tmp / OUTSIDE)
    with session_fleet(tmp, pg_url, "redis", BROWSERQ_UPLOADS_DIR=str(uploads)) as running:
        yield running


def stdio_client(fleet: Fleet, *flags: str) -> Client:
    """A client that launches ``browserq mcp`` (stdio) on the fleet's queue and settings."""
    params = StdioServerParameters(command=MCP[0], args=[*MCP[1:], *FLAGS, *flags], env=fleet.config.env,
                                   cwd=str(REPO))
    return Client(params)


def http_client(url: str, token: str | None, *, terminate_on_close: bool = True) -> Client:
    """A client of the HTTP server at ``url`` sending ``token`` as its bearer token."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    transport = streamable_http_client(url, http_client=httpx2.AsyncClient(headers=headers, timeout=120),
                                       terminate_on_close=terminate_on_close)
    return Client(transport)


def _listening(port: int) -> bool:
    with socket.socket() as probe:
        probe.settimeout(1)
        return probe.connect_ex(("127.0.0.1", port)) == 0


@contextmanager
def http_server(fleet: Fleet, tmp: Path, *flags: str, **env: str) -> Iterator[str]:
    """``browserq mcp --http 127.0.0.1:PORT`` with ``env`` added; yields its /mcp URL."""
    port = free_port()
    log = tmp / f"mcp-{port}.log"
    proc = spawn_logged([*MCP, "--http", f"127.0.0.1:{port}", *FLAGS, *flags], {**fleet.config.env, **env}, log)
    try:
        wait_until(lambda: _listening(port) or proc.poll() is not None, 120, "browserq mcp to listen")
        assert proc.poll() is None, read_log(log)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        stop(proc, 30, group=True)


def run_mcp(*args: str, env: dict[str, str], timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*MCP, *args], env=env, cwd=REPO, capture_output=True, text=True, timeout=timeout)


class Recorded:
    """A client whose ``call_tool`` calls are kept (name and arguments, in order) and written to
    ``path`` after each call: what a failing test shows, and what an issue quotes."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.calls: list[dict[str, Any]] = []
        self.client: Client | None = None

    def on(self, client: Client) -> Recorded:
        self.client = client
        return self

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> Any:
        self.calls.append({"tool": name, "arguments": arguments})
        self.path.write_text(self.shown() + "\n")
        assert self.client is not None
        return await self.client.call_tool(name, arguments)

    def shown(self) -> str:
        """One call a line: ``tool {arguments}``."""
        return "\n".join(f"{call['tool']} {json.dumps(call['arguments'])}" for call in self.calls)


def text(result: Any) -> str:
    return "\n".join(getattr(block, "text", "") for block in result.content)


def ok(result: Any) -> str:
    """The text of a result that must not be an error."""
    assert not result.is_error, text(result)
    return text(result)


def ref(snapshot: str, pattern: str) -> str:
    """The ref on the first snapshot line matching ``pattern``."""
    found = re.search(pattern + r'[^\n]*\[ref=([^\]]+)\]', snapshot)
    assert found, f"{pattern!r} not in the snapshot:\n{snapshot}"
    return found.group(1)


def open_sessions() -> set[str]:
    """The ids of the session runs queued or running now (this process is the fleet's producer)."""
    from browserq.submit.services import producer_services

    runs = producer_services().store.runs
    return {run.id for status in ("queued", "running") for run in runs.list_runs(limit=200, status=status,
                                                                                   template="session")}


__all__ = [
    "FLAGS",
    "LINK_OUT",
    "MCP",
    "OUTSIDE",
    "UPLOADS",
    "Recorded",
    "http_client",
    "http_server",
    "mcp_fleet_fixture",
    "ok",
    "open_sessions",
    "ref",
    "run_mcp",
    "stdio_client",
    "text",
]
