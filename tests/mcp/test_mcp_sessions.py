"""``browserq mcp`` driven by the SDK's own client (no model) against a real worker, PostgreSQL and
Chromium on the demo site: over stdio and over HTTP a client logs in, fills a form through refs,
extracts records and saves the session as a template whose ``run_template.delay()`` (no agent)
gives the same records; a stale ref is an error that presses nothing; two clients, two sessions;
a client that goes away leaves no open session."""

from __future__ import annotations

import base64
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from browserq.demo.quotes import QUOTES, QUOTES_PER_PAGE
from browserq.demo.site import DEMO_PASSWORD
from tests.mcp.mcp_fixtures import (
    Recorded,
    http_client,
    http_server,
    mcp_fleet_fixture,  # noqa: F401  # the fixture
    ok,
    open_sessions,
    ref,
    stdio_client,
    text,
)
from tests.sessions.session_fixtures import Fleet
from tests.support.polling import wait_until

pytestmark = pytest.mark.slow

TOKEN = "mcp-test-token-4f1c9a"


async def log_in(client: Client | Recorded, base: str) -> str:
    """Log in to the demo site through a snapshot's refs, the password by reference (the server's
    ``--secrets``: the agent never sees it); returns the login page's snapshot."""
    ok(await client.call_tool("browser_navigate", {"url": f"{base}/login"}))
    login = ok(await client.call_tool("browser_snapshot", {"interactive": True}))
    ok(await client.call_tool("browser_fill_form", {"fields": [
        {"name": "Username", "type": "textbox", "ref": ref(login, 'textbox "[^"]*[Uu]ser'), "value": "demo"},
        {"name": "Password", "type": "textbox", "ref": ref(login, 'textbox "[^"]*[Pp]ass'), "value": "${password}"},  # --secrets
    ]}))
    ok(await client.call_tool("browser_click", {"element": "Log in", "ref": ref(login, 'button "Log in"')}))
    return login


async def agent_flow(client: Recorded, base: str, name: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """What an agent does: log in, fill the contact form by refs, extract the quotes; then save
    the session as template ``name`` (the contact name its param ``who``). Returns the records
    and what ``session_save_template`` answered."""
    login = await log_in(client, base)  # the password by reference: the server's --secrets
    account = ok(await client.call_tool("browser_snapshot", {}))
    assert "Welcome, demo" in account

    stale = await client.call_tool("browser_click", {"element": "Log in", "ref": ref(login, 'button "Log in"')})
    assert stale.is_error and text(stale).startswith("REF_STALE") and "browser_snapshot" in text(stale)

    ok(await client.call_tool("browser_fill_form", {"fields": [
        {"name": "Name", "type": "textbox", "ref": ref(account, 'textbox "Name"'), "value": "Ada MCP"},
        {"name": "Topic", "type": "combobox", "ref": ref(account, 'combobox "Topic"'), "value": "Sales"},
        {"name": "High", "type": "radio", "ref": ref(account, 'radio "High"'), "value": "true"},
        {"name": "Subscribe", "type": "checkbox", "ref": ref(account, 'checkbox "Subscribe'), "value": "true"},
    ]}))
    ok(await client.call_tool("browser_type", {"element": "Message", "ref": ref(account, 'textbox "Message"'),
                                                "text": "sent by an MCP client"}))
    ok(await client.call_tool("browser_click", {"element": "Send", "ref": ref(account, 'button "Send"')}))
    ok(await client.call_tool("browser_wait_for", {"text": "Ada MCP"}))

    shot = await client.call_tool("browser_take_screenshot", {})
    assert not shot.is_error and base64.b64decode(shot.content[0].data).startswith(b"\x89PNG")

    ok(await client.call_tool("browser_navigate", {"url": f"{base}/quotes/"}))
    ok(await client.call_tool("browser_navigate", {"url": f"{base}/quotes/page/2/"}))
    assert '"url"' in ok(await client.call_tool("browser_navigate_back", {}))  # back on page 1
    extracted = await client.call_tool("browser_extract", {"selector": ".quote",
                                                           "fields": {"text": ".text", "author": ".author"}})
    records: list[dict[str, Any]] = extracted.structured_content["output"]
    saved = ok_result(await client.call_tool("session_save_template", {
        "name": name, "version": "1.0.0", "params": {"who": "Ada MCP"}}))
    return records, saved


def secrets_file(tmp: Path) -> Path:
    """The server's ``--secrets`` file: the demo's password, typed by the agent as ``${password}``."""
    path = tmp / "secrets.env"
    path.write_text(f"# the demo site's account\npassword='{DEMO_PASSWORD}'\n")
    return path


def ok_result(result: Any) -> dict[str, Any]:
    ok(result)
    structured: dict[str, Any] = result.structured_content
    return structured


def _sent(demo: Any) -> list[dict[str, Any]]:
    return [s for s in demo.submissions_snapshot() if s.get("name") == "Ada MCP"]


@contextmanager
def explained(recorded: Recorded, frozen: Path) -> Iterator[None]:
    """A failure inside shows the tool calls made so far and the frozen template (both are
    files under the test's tmp dir too)."""
    try:
        yield
    except Exception as failed:  # an assert here, or one in the client's task group (an ExceptionGroup)
        saved = frozen.read_text() if frozen.exists() else "(not saved)"
        raise AssertionError(f"{failed}\n--- tool calls ({recorded.path}) ---\n{recorded.shown()}\n"
                             f"--- frozen template ({frozen}) ---\n{saved}") from failed


def _check_and_replay(flow: tuple[list[dict[str, Any]], dict[str, Any]], demo: Any, name: str, frozen: Path) -> None:
    """The agent's records and form; then its frozen template, run with ``.delay()``, gives the same."""
    from browserq import run_template

    records, saved = flow
    frozen.write_text(saved["text"])
    assert records == [{"text": q.display_text, "author": q.author} for q in QUOTES[:QUOTES_PER_PAGE]]
    sent = _sent(demo)
    assert len(sent) == 1
    assert (sent[0]["topic"], sent[0]["priority"], sent[0].get("subscribe"), sent[0]["message"]) == (
        "sales", "high", "yes", "sent by an MCP client")
    assert saved["ref"] == f"{name}@1.0.0" and "${who}" in saved["text"] and "ref=" not in saved["text"]
    # the secret the agent typed by reference is a secret param of the template, never its value
    assert "${password}" in saved["text"] and "password: {type: secret" in saved["text"]
    assert DEMO_PASSWORD not in saved["text"]
    session_id = re.search(r"Frozen from session (\w+)", saved["text"])
    assert session_id, saved["text"]
    from browserq.submit.services import producer_services

    session_steps = repr(producer_services().store.steps.steps(session_id[1]))
    assert "[secret:password]" in session_steps and DEMO_PASSWORD not in session_steps
    result = run_template.delay(saved["ref"], params={"password": DEMO_PASSWORD}).get(timeout=300)
    assert result["status"] == "completed", result
    assert records in result["outputs"].values(), result["outputs"]
    assert len(_sent(demo)) == 2 and _sent(demo)[1] == sent[0]  # the replay logged in and sent the same form


def test_a_client_logs_in_fills_a_form_extracts_and_saves_a_template_over_stdio(
        mcp_fleet: Fleet, demo, tmp_path: Path) -> None:
    before = open_sessions()
    recorded, frozen = Recorded(tmp_path / "tool-calls.txt"), tmp_path / "frozen.yaml"

    async def main() -> tuple[list[dict[str, Any]], dict[str, Any]]:
        async with stdio_client(mcp_fleet, "--secrets", str(secrets_file(tmp_path))) as client:
            return await agent_flow(recorded.on(client), demo.url, "mcp-flow-stdio")

    with explained(recorded, frozen):
        _check_and_replay(anyio.run(main), demo, "mcp-flow-stdio", frozen)
    # the client went away: the server closed its session with the connection
    wait_until(lambda: not (open_sessions() - before), 60, "the stdio client's session to close")


def test_a_client_logs_in_fills_a_form_extracts_and_saves_a_template_over_http(
        mcp_fleet: Fleet, demo, tmp_path: Path) -> None:
    recorded, frozen = Recorded(tmp_path / "tool-calls.txt"), tmp_path / "frozen.yaml"

    async def main(url: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        async with http_client(url, TOKEN) as client:
            return await agent_flow(recorded.on(client), demo.url, "mcp-flow-http")

    before = open_sessions()
    with (http_server(mcp_fleet, tmp_path, "--secrets", str(secrets_file(tmp_path)), BROWSERQ_MCP_TOKEN=TOKEN) as url,
          explained(recorded, frozen)):
        _check_and_replay(anyio.run(main, url), demo, "mcp-flow-http", frozen)
        # the client's DELETE ended its connection, and with it its session
        wait_until(lambda: not (open_sessions() - before), 60, "the HTTP client's session to close")


def test_two_clients_get_two_sessions_that_share_no_cookies(mcp_fleet: Fleet, demo, tmp_path: Path) -> None:
    """Two clients at once, one of them with a token mapped to tenant acme (BROWSERQ_MCP_TOKENS)."""
    before = open_sessions()
    tenants: list[str | None] = []

    async def main(url: str) -> str:
        async with http_client(url, TOKEN) as first, http_client(url, "acme-token") as second:
            await log_in(first, demo.url)
            ok(await second.call_tool("browser_navigate", {"url": f"{demo.url}/account"}))
            seen = ok(await second.call_tool("browser_snapshot", {}))
            assert "Welcome, demo" in ok(await first.call_tool("browser_snapshot", {}))
            tenants.extend(sorted((run_of(run_id).tenant for run_id in open_sessions() - before), key=str))
            return seen

    with http_server(mcp_fleet, tmp_path, "--secrets", str(secrets_file(tmp_path)), BROWSERQ_MCP_TOKEN=TOKEN,
                     BROWSERQ_MCP_TOKENS='{"acme-token": "acme"}') as url:
        second_saw = anyio.run(main, url)
    assert "/login" in second_saw.splitlines()[0] and "Welcome" not in second_saw  # no login cookie there
    assert tenants == [None, "acme"]  # two sessions; the second client's under its token's tenant


def run_of(run_id: str) -> Any:
    from browserq.submit.services import producer_services

    return producer_services().store.runs.get_run(run_id)


def test_a_client_that_vanishes_leaves_no_open_session(mcp_fleet: Fleet, demo, tmp_path: Path) -> None:
    """The client neither closes nor DELETEs: its session ends by the idle timeout (3 s here)."""
    async def main(url: str) -> None:
        async with http_client(url, TOKEN, terminate_on_close=False) as client:
            ok(await client.call_tool("browser_navigate", {"url": f"{demo.url}/"}))

    before = open_sessions()
    with http_server(mcp_fleet, tmp_path, "--idle-timeout", "3", BROWSERQ_MCP_TOKEN=TOKEN) as url:
        anyio.run(main, url)
        wait_until(lambda: open_sessions() - before == set(), 90, "the vanished client's session to idle out")
