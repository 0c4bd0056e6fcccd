"""``browserq mcp`` refuses what it must, specifically, and stays usable: a stale ref presses no
other button; unknown tools, wrong types, out-of-range values and never-issued refs are errors
that name the problem; HTTP without the token, or with a wrong one, is 401 and runs nothing; the
server does not start on a network address without a token."""

from __future__ import annotations

from pathlib import Path

import anyio
import httpx2
import pytest
from mcp import MCPError

from tests.mcp.mcp_fixtures import (
    LINK_OUT,
    OUTSIDE,
    UPLOADS,
    http_client,
    http_server,
    mcp_fleet_fixture,  # noqa: F401  # the fixture
    ok,
    open_sessions,
    ref,
    run_mcp,
    stdio_client,
    text,
)
from tests.sessions.conftest import PressCounter, pages_with_presses
from tests.sessions.session_fixtures import Fleet
from tests.support.http import serve_http
from tests.support.polling import wait_until

pytestmark = pytest.mark.slow

TOKEN = "mcp-input-token-77ab"

#: Alpha and Beta; Shuffle re-renders them as new, identical-looking nodes in swapped places.
SWAPPING = """<!doctype html><title>Buttons</title>
<script>
function press(name) { fetch('/press/' + name, {method: 'POST'}); }
function shuffle() {
  const box = document.getElementById('box');
  const [first, second] = box.querySelectorAll('button');
  box.replaceChildren(second.cloneNode(true), first.cloneNode(true));
}
</script>
<div id="box"><button onclick="press('alpha')">Alpha</button><button onclick="press('beta')">Beta</button></div>
<button onclick="shuffle()">Shuffle</button>
"""


def test_a_stale_ref_is_an_error_and_presses_no_other_button(mcp_fleet: Fleet) -> None:
    presses = PressCounter()

    async def main(base: str) -> None:
        async with stdio_client(mcp_fleet) as client:
            ok(await client.call_tool("browser_navigate", {"url": f"{base}/"}))
            before = ok(await client.call_tool("browser_snapshot", {}))
            ok(await client.call_tool("browser_click", {"element": "Shuffle", "ref": ref(before, 'button "Shuffle"')}))
            stale = await client.call_tool("browser_click", {"element": "Alpha", "ref": ref(before, 'button "Alpha"')})
            assert stale.is_error and text(stale).startswith("REF_STALE:")
            assert "take a new snapshot (browser_snapshot)" in text(stale) and "still open" in text(stale)
            after = ok(await client.call_tool("browser_snapshot", {}))  # the session goes on
            assert ref(after, 'button "Alpha"') != ref(before, 'button "Alpha"')
            ok(await client.call_tool("browser_click", {"element": "Alpha", "ref": ref(after, 'button "Alpha"')}))

    with serve_http(pages_with_presses({"/": SWAPPING}, presses)) as address:
        anyio.run(main, f"http://{address}")
        wait_until(lambda: presses["alpha"] == 1, 30, "the press of the new Alpha")
    assert presses["beta"] == 0  # the stale ref pressed nothing, least of all the button now in its place


def test_bad_input_is_a_specific_error_and_the_server_goes_on(mcp_fleet: Fleet, demo) -> None:
    async def main() -> None:
        async with stdio_client(mcp_fleet) as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            assert "browser_evaluate" not in tools  # these sessions do not allow eval
            assert tools["browser_snapshot"].input_schema["properties"]["budget"]["maximum"] == 100_000
            with pytest.raises(MCPError, match="unknown tool 'browser_fly'"):
                await client.call_tool("browser_fly", {})
            with pytest.raises(MCPError, match="do not allow eval"):
                await client.call_tool("browser_evaluate", {"function": "() => 1"})
            for arguments, problem in (
                ({"url": 42}, "url: 42 is not of type 'string'"),
                ({}, "'url' is a required property"),
                ({"url": "x" * 5000}, "url: 'xxx"),
                ({"url": f"{demo.url}/", "nope": 1}, "Additional properties are not allowed ('nope'"),
            ):
                refused = await client.call_tool("browser_navigate", arguments)
                assert refused.is_error and text(refused).startswith("INVALID_ARGUMENTS: browser_navigate: ")
                assert problem in text(refused)
            small = await client.call_tool("browser_snapshot", {"budget": 5})
            assert small.is_error and "budget: 5 is less than the minimum of 1000" in text(small)
            clash = await client.call_tool("browser_wait_for", {})
            assert clash.is_error and "give exactly one of time, text, textGone" in text(clash)

            ok(await client.call_tool("browser_navigate", {"url": f"{demo.url}/login"}))
            unknown = await client.call_tool("browser_click", {"element": "a button", "ref": "e999999.1"})
            assert unknown.is_error and text(unknown).startswith("REF_UNKNOWN:")
            denied = await client.call_tool("browser_navigate", {"url": "file:///etc/passwd"})
            assert denied.is_error and "URL_DENIED" in text(denied)
            assert "Login" in ok(await client.call_tool("browser_snapshot", {}))  # still the same session

    anyio.run(main)


def test_http_without_or_with_a_wrong_token_is_401_and_runs_nothing(mcp_fleet: Fleet, demo, tmp_path: Path) -> None:
    call = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    before = open_sessions()

    async def refused(url: str) -> None:
        with pytest.raises(BaseException):  # noqa: B017 - the SDK's client gives up on the 401 its own way
            async with http_client(url, "wrong-token") as client:
                await client.call_tool("browser_navigate", {"url": f"{demo.url}/"})

    with http_server(mcp_fleet, tmp_path, BROWSERQ_MCP_TOKENS=f'{{"{TOKEN}": "acme"}}') as url:
        for auth in ({}, {"Authorization": "Bearer wrong-token"}, {"Authorization": f"Basic {TOKEN}"}):
            answer = httpx2.post(url, json=call, headers={**headers, **auth}, timeout=30)
            assert answer.status_code == 401, answer.text
        anyio.run(refused, url)
        assert httpx2.post(url, json=call, headers={**headers, "Authorization": f"Bearer {TOKEN}"},
                           timeout=30).status_code == 200
    assert open_sessions() - before == set()  # nothing was opened for the refused calls


def test_the_http_server_needs_a_token_off_loopback(mcp_fleet: Fleet) -> None:
    env = {k: v for k, v in mcp_fleet.config.env.items() if not k.startswith("BROWSERQ_MCP_TOKEN")}
    off_loopback = run_mcp("--http", "0.0.0.0:8931", "--no-auth", env=env)
    assert off_loopback.returncode != 0 and "needs BROWSERQ_MCP_TOKEN" in off_loopback.stderr
    assert "Traceback" not in off_loopback.stderr
    no_flag = run_mcp("--http", "127.0.0.1:8931", env=env)
    assert no_flag.returncode != 0 and "--no-auth" in no_flag.stderr


def test_a_bad_secrets_file_is_refused_before_serving(mcp_fleet: Fleet, tmp_path: Path) -> None:
    bad = tmp_path / "bad.env"
    cases = {
        "password s3cret\n": "line 1: expected NAME=value",
        "# ok\n\n9lives=x\n": "line 3: expected NAME=value",
        "token=\n": "line 1: token has no value",
    }
    for text_, problem in cases.items():
        bad.write_text(text_)
        done = run_mcp("--secrets", str(bad), env=mcp_fleet.config.env)
        assert done.returncode != 0 and problem in done.stderr, (text_, done.stderr)
        assert "Traceback" not in done.stderr and "s3cret" not in done.stderr
    missing = run_mcp("--secrets", str(tmp_path / "nope.env"), env=mcp_fleet.config.env)
    assert missing.returncode != 0 and "cannot read it" in missing.stderr and "Traceback" not in missing.stderr


TOOLS_PAGE = """<!doctype html><title>Tools</title>
<script>function press(name) { fetch('/press/' + name, {method: 'POST'}); }</script>
<select aria-label="Size" onchange="press('select-' + this.value)">
  <option value="s">Small</option><option value="l">Large</option></select>
<button onmouseover="press('hovered')">Hover me</button>
<input aria-label="Key box" onkeydown="if (event.key === 'Enter') press('enter')">
<button onclick="press(confirm('Sure?') ? 'confirmed' : 'declined')">Ask</button>
<a href="/other" target="_blank">Other</a>
"""
OTHER_PAGE = "<!doctype html><title>Other page</title><h1>The other page</h1>"


def test_the_other_tools_act_through_their_template_actions(mcp_fleet: Fleet) -> None:
    """select_option, hover, press_key, handle_dialog, tabs (list, select, close, new), evaluate:
    each a session command."""
    presses = PressCounter()

    async def main(base: str) -> None:
        async with stdio_client(mcp_fleet, "--allow-eval") as client:
            assert "browser_evaluate" in {tool.name for tool in (await client.list_tools()).tools}
            ok(await client.call_tool("browser_navigate", {"url": f"{base}/"}))
            page = ok(await client.call_tool("browser_snapshot", {}))
            ok(await client.call_tool("browser_select_option", {"element": "Size", "ref": ref(page, 'combobox "Size"'),
                                                                 "values": ["l"]}))
            ok(await client.call_tool("browser_hover", {"element": "Hover me", "ref": ref(page, 'button "Hover me"')}))
            ok(await client.call_tool("browser_click", {"element": "Key box", "ref": ref(page, 'textbox "Key box"')}))
            ok(await client.call_tool("browser_press_key", {"key": "Enter"}))
            ok(await client.call_tool("browser_handle_dialog", {"accept": True}))
            ok(await client.call_tool("browser_click", {"element": "Ask", "ref": ref(page, 'button "Ask"')}))
            ok(await client.call_tool("browser_click", {"element": "Ask", "ref": ref(page, 'button "Ask"')}))  # dismissed
            assert ok(await client.call_tool("browser_evaluate", {"function": "() => 6 * 7"})) == "42"

            ok(await client.call_tool("browser_click", {"element": "Other", "ref": ref(page, 'link "Other"')}))
            listed = await client.call_tool("browser_tabs", {"action": "list"})
            assert [(t["index"], t["title"], t["current"]) for t in listed.structured_content["output"]] == [
                (0, "Tools", True), (1, "Other page", False)]
            ok(await client.call_tool("browser_tabs", {"action": "select", "index": 1}))
            assert "The other page" in ok(await client.call_tool("browser_snapshot", {}))
            ok(await client.call_tool("browser_tabs", {"action": "close"}))
            assert "Hover me" in ok(await client.call_tool("browser_snapshot", {}))
            opened = await client.call_tool("browser_tabs", {"action": "new", "url": f"{base}/other"})
            assert opened.structured_content["output"] == {"index": 1, "status": 200, "url": f"{base}/other"}
            assert "The other page" in ok(await client.call_tool("browser_snapshot", {}))
            blank = await client.call_tool("browser_tabs", {"action": "new"})
            assert blank.structured_content["output"]["url"] == "about:blank"
            denied = await client.call_tool("browser_tabs", {"action": "new", "url": "file:///etc/passwd"})
            assert denied.is_error and "URL_DENIED" in text(denied)
            listed = await client.call_tool("browser_tabs", {"action": "list"})
            assert [(t["url"], t["current"]) for t in listed.structured_content["output"]] == [
                (f"{base}/", False), (f"{base}/other", False), ("about:blank", True)]  # the refused one opened none
            ok(await client.call_tool("browser_tabs", {"action": "close"}))
            ok(await client.call_tool("browser_tabs", {"action": "close"}))
            assert "Hover me" in ok(await client.call_tool("browser_snapshot", {}))
            # a handoff is the session's handoff command: nobody comes within its timeout here
            handoff = await client.call_tool("browser_handoff", {"message": "solve the captcha", "timeout_s": 1})
            assert handoff.is_error and text(handoff).startswith("HUMAN_TIMEOUT"), text(handoff)
            assert "Hover me" in ok(await client.call_tool("browser_snapshot", {}))  # the session goes on

    with serve_http(pages_with_presses({"/": TOOLS_PAGE, "/other": OTHER_PAGE}, presses)) as address:
        anyio.run(main, f"http://{address}")
        for name in ("select-l", "hovered", "enter", "confirmed", "declined"):
            wait_until(lambda name=name: presses[name] == 1, 30, f"the page to see {name}")


UPLOAD_PAGE = """<!doctype html><title>Upload</title>
<input type="file" aria-label="Attachment" onchange="
  const file = this.files[0];
  file.text().then(t => { document.getElementById('got').textContent = 'got ' + file.name + ': ' + t; })">
<div id="got">nothing yet</div>
"""


def test_a_file_from_the_uploads_dir_is_set_and_one_outside_it_is_refused(mcp_fleet: Fleet) -> None:
    """browser_file_upload reads a file of the worker's BROWSERQ_UPLOADS_DIR; ``..`` or an absolute
    path out of it, or a symlink out of it, fails PATH_DENIED and sets nothing."""
    async def main(base: str) -> None:
        async with stdio_client(mcp_fleet) as client:
            ok(await client.call_tool("browser_navigate", {"url": f"{base}/"}))
            page = ok(await client.call_tool("browser_snapshot", {}))
            attachment = ref(page, 'button "Attachment"')
            for path, problem in ((f"../{OUTSIDE}", f"upload path '../{OUTSIDE}' contains '..'; it must stay inside "
                                                   "BROWSERQ_UPLOADS_DIR"),
                                  (LINK_OUT, f"upload path '{LINK_OUT}' resolves outside BROWSERQ_UPLOADS_DIR"),
                                  ("/etc/passwd", "upload path '/etc/passwd'")):
                refused = await client.call_tool("browser_file_upload", {"element": "Attachment", "ref": attachment,
                                                                         "paths": [path]})
                assert refused.is_error and text(refused).startswith("PATH_DENIED") and problem in text(refused), \
                    text(refused)
            assert "nothing yet" in ok(await client.call_tool("browser_snapshot", {}))
            [(name, content)] = UPLOADS.items()
            uploaded = await client.call_tool("browser_file_upload", {"element": "Attachment", "ref": attachment,
                                                                      "paths": [name]})
            assert [(f["filename"], f["size"]) for f in uploaded.structured_content["output"]] == [
                (name, len(content))]
            ok(await client.call_tool("browser_wait_for", {"text": f"got {name}: {content}"}))

    with serve_http(pages_with_presses({"/": UPLOAD_PAGE}, PressCounter())) as address:
        anyio.run(main, f"http://{address}")
