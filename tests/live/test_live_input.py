"""What a person's input through the live view leaves behind, and input the live view must refuse.

Real Chromium, the real live-view server and a waiting run, set up as in
:mod:`tests.live.test_handoff` (its runtime fixture and helpers are imported from there); the
page has password fields inside an open shadow root and inside a cross-origin iframe (served on
127.0.0.3), a plain one, and an ordinary field typed into one key per message, as the page
script sends them. No character typed may be in the step records, and none may be in the run's
trace (every member of the zip, in plain, percent-encoded, base64 and HTML-escaped forms), while
the trace goes on recording after the wait. Then: numbers the page cannot take (``x: 1e308``,
NaN, Infinity, huge wheel deltas, over-long text) leave later input working, and a viewer who
leaves while an input is applied is an ordinary disconnect in the worker's log.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import ThreadingHTTPServer
from typing import Any

import aiohttp
import pytest

from browserq.execute.runtime import Runtime
from browserq.live import server as live_server
from tests.conftest import template
from tests.live.test_handoff import HEAD, _in_thread, _waiting_link
from tests.live.test_handoff import runtime as runtime  # the fixture (a runtime of this module)
from tests.secrets.forms import expand, find_leaks, secret_forms
from tests.support.http import html_pages, serve_http

SHADOW_PW, FRAME_PW, PLAIN_PW, CODE = "Shad0w-Pass!", "Fr4me-Secr%t", "Plain-Pw-77", "Orchid-4242"
WAIT = 30  # the longest a test waits for one thing (a failure guard, not a timing assert)
_BOX = "position:absolute;left:100px;width:220px;height:30px;box-sizing:border-box"


def _pages(foreign: str) -> dict[str, str]:
    shadow = (
        "document.getElementById('host').attachShadow({mode:'open'}).innerHTML="
        f"'<input type=password id=spw style=\"{_BOX};left:0;top:0\">'"
    )
    return {
        "/form": HEAD + f'<div id="host" style="{_BOX};top:100px"></div>'
        f'<iframe src="http://{foreign}/inner" style="position:absolute;left:100px;top:200px;width:300px;'
        'height:80px;border:0"></iframe>'
        f'<input id="code" style="{_BOX};top:320px"><input id="pw" type="password" style="{_BOX};top:380px">'
        '<button id="busy" style="position:absolute;left:400px;top:100px;width:100px;height:40px" '
        'onclick="const t=Date.now();while(Date.now()-t<6000);">busy</button>'
        f'<p id="out" style="position:absolute;left:100px;top:440px">done</p><script>{shadow}</script></body></html>',
        "/mirror": HEAD + f'<input id="code" style="{_BOX};top:100px" '
        "oninput=\"document.getElementById('m').textContent='you typed '+this.value\">"
        '<p id="m" style="position:absolute;left:100px;top:200px"></p></body></html>',
        "/inner": HEAD
        + '<input id="fpw" type="password" style="position:absolute;left:10px;top:10px;'
        'width:220px;height:30px"></body></html>',
    }


@contextmanager
def _serve_on(host: str, pages: dict[str, str]) -> Iterator[str]:
    server = ThreadingHTTPServer((host, 0), html_pages(pages))
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"{host}:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def form_site() -> Iterator[str]:
    inner: dict[str, str] = {}
    with _serve_on("127.0.0.3", inner) as foreign:
        pages = _pages(foreign)
        inner.update(pages)
        with serve_http(html_pages(pages)) as host:
            yield f"http://{host}"


def _typed(text: str) -> list[dict[str, Any]]:
    """One message per key, as the page script sends them."""
    return [{"type": "text", "text": c} for c in text]


def _click(x: float, y: float) -> dict[str, Any]:
    return {"type": "click", "x": x, "y": y}


async def _session(link: str, messages: list[Any]) -> list[dict[str, Any]]:
    """Open the live view, send ``messages`` (a str goes as it is), then Continue; the error
    replies, once the handoff ended (every input before Continue was handled: one at a time)."""
    errors: list[dict[str, Any]] = []
    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as http:
        async with http.get(link) as page:
            assert page.status == 200
        async with http.ws_connect(link.split("?", 1)[0] + "/ws") as ws:
            for message in [*messages, {"type": "continue"}]:
                await (ws.send_str(message) if isinstance(message, str) else ws.send_json(message))
            while (reply := await ws.receive_json(timeout=WAIT))["type"] != "ended":
                if reply["type"] == "error":
                    errors.append(reply)
    return errors


def _inputs(runtime: Runtime, run_id: str) -> list[dict[str, Any]]:
    return [s.inputs for s in runtime.store.steps.steps(run_id) if s.step_path.endswith("~input")]


def test_typing_leaves_no_character_in_the_records_nor_in_the_trace(
    runtime: Runtime, form_site: str
) -> None:
    """Password fields in a shadow root and a cross-origin frame count as password fields; no
    field's characters are recorded; the trace, recorded again after the wait, holds no typed
    value in any form (issue 22, item 3)."""
    loaded = template(f"""
        settings: {{trace: always, timeout_s: 60}}
        steps:
          - {{action: navigate, url: "{form_site}/form"}}
          - {{id: ask, action: handoff, message: "log in for me", timeout_s: 120}}
          - {{action: click, selector: "#out"}}
          - {{action: get, selector: "#out", into: out}}
    """)
    thread, done = _in_thread(runtime, loaded)
    run_id, link = _waiting_link(runtime, thread)
    errors = asyncio.run(
        _session(
            link,
            [
                _click(150, 115),
                *_typed(SHADOW_PW),
                {"type": "key", "key": "Tab"},
                _click(150, 225),
                {"type": "text", "text": FRAME_PW},
                {"type": "key", "key": "Enter"},
                _click(150, 335),
                *_typed(CODE),
                {"type": "key", "key": "Backspace"},
                {"type": "text", "text": "2"},
                _click(150, 395),
                {"type": "text", "text": PLAIN_PW},
            ],
        )
    )
    thread.join(WAIT)
    [outcome] = done
    assert errors == [] and outcome.status == "completed", (errors, outcome.error_message)
    inputs = _inputs(runtime, run_id)
    texts = [i for i in inputs if "length" in i and "key" not in i and "x" not in i]
    # the shadow root's keys and Tab, the frame's text and Enter, the code's keys and "2", the plain
    # password's text: one attempt each (Tab and Enter in a password field: no name either)
    assert len(texts) == len(SHADOW_PW) + 1 + 1 + 1 + len(CODE) + 1 + 1
    assert all("text" not in i for i in inputs)  # no character of any field
    assert {"length": len(FRAME_PW), "password": True} in inputs  # in the cross-origin frame
    assert {"length": len(PLAIN_PW), "password": True} in inputs
    assert (
        inputs.count({"length": 1, "password": True}) >= len(SHADOW_PW) + 1
    )  # the shadow root's, and Tab there
    assert {"key": "Backspace", "length": 1} in inputs
    records = repr(runtime.store.steps.steps(run_id)).encode()
    trace = next(a for a in runtime.store.steps.artifacts(run_id) if a.kind == "trace")
    data = (runtime.settings.artifacts_dir / trace.path).read_bytes()
    with zipfile.ZipFile(runtime.settings.artifacts_dir / trace.path) as archive:
        names = archive.namelist()
    assert {"trace.trace", "trace-1.trace"} <= set(names)  # recorded before and after the wait
    assert any(
        b"__playwright_value_" in blob for _name, blob in expand("trace.zip", data)
    )  # fields kept
    blobs = [*expand("trace.zip", data), ("step records", records)]
    for value in (SHADOW_PW, FRAME_PW, PLAIN_PW, CODE):
        assert find_leaks(blobs, secret_forms(value, prefix_len=6)) == [], value


def test_a_failure_snapshot_after_the_wait_holds_no_typed_value(runtime: Runtime, form_site: str) -> None:
    """The page echoes what the person typed into its text, then a later step fails: the failure
    DOM and the network capture hold no form of the typed value (scrubbed as in the trace)."""
    loaded = template(f"""
        settings: {{trace: off, timeout_s: 60}}
        steps:
          - {{action: navigate, url: "{form_site}/mirror"}}
          - {{id: ask, action: handoff, message: "type the code", timeout_s: 120}}
          - {{action: click, selector: "#missing", timeout_s: 2, retries: 0}}
    """)
    thread, done = _in_thread(runtime, loaded)
    run_id, link = _waiting_link(runtime, thread)
    errors = asyncio.run(_session(link, [_click(150, 115), *_typed(CODE)]))
    thread.join(WAIT)
    [outcome] = done
    assert errors == [] and outcome.status == "failed", (errors, outcome.error_message)
    evidence = {a.kind: a for a in runtime.store.steps.artifacts(run_id)}
    assert {"dom", "network"} <= set(evidence), sorted(evidence)
    dom = (runtime.settings.artifacts_dir / evidence["dom"].path).read_bytes()
    assert b"you typed " in dom  # the page did echo it
    blobs = [(kind, (runtime.settings.artifacts_dir / evidence[kind].path).read_bytes()) for kind in ("dom", "network")]
    assert find_leaks(blobs, secret_forms(CODE, prefix_len=6)) == []


def test_inputs_the_page_cannot_take_leave_later_input_working(
    runtime: Runtime, form_site: str
) -> None:
    """``x: 1e308`` and friends are brought into the viewport or refused; the person's next
    click and keys land (issue 22, item 11)."""
    loaded = template(f"""
        settings: {{trace: off, timeout_s: 60}}
        steps:
          - {{action: navigate, url: "{form_site}/form"}}
          - {{id: ask, action: handoff, message: "type ok", timeout_s: 120}}
          - {{action: get, what: value, selector: "#code", into: code}}
    """)
    thread, done = _in_thread(runtime, loaded)
    run_id, link = _waiting_link(runtime, thread)
    errors = asyncio.run(
        _session(
            link,
            [
                _click(1e308, 1e308),
                _click(-1e308, -5),
                _click(2**80, 10),
                '{"type": "click", "x": NaN, "y": 5}',
                '{"type": "click", "x": 5, "y": Infinity}',
                '{"type": "wheel", "x": 10, "y": 10, "dx": 1e308, "dy": -1e308}',
                '{"type": "wheel", "x": 10, "y": 10, "dx": 0, "dy": NaN}',
                {"type": "click", "x": "150", "y": 335},
                {"type": "text", "text": "x" * 3000},
                {"type": "key", "key": 7},
                _click(150, 335),
                *_typed("ok"),
            ],
        )
    )
    thread.join(WAIT)
    [outcome] = done
    assert outcome.status == "completed" and outcome.outputs == {"code": "ok"}, (
        errors,
        outcome.error_message,
    )
    shown = [e["message"] for e in errors]
    assert shown == [
        "x must be a finite number, not nan",
        "y must be a finite number, not inf",
        "dy must be a finite number, not nan",
        "x must be a finite number, not 150",
        f"text must be 1 to {live_server.MAX_TEXT} characters, one message each",
        "key '7' is not one the live view forwards",
    ]
    clicks = [(i["x"], i["y"]) for i in _inputs(runtime, run_id) if "button" in i]
    width, height = clicks[0]
    assert (
        clicks[:3] == [(width, height), (0, 0), (width, 10)]
        and 0 < width < 5000
        and 0 < height < 5000
    )
    wheels = [i for i in _inputs(runtime, run_id) if "delta_y" in i]
    assert wheels == [
        {
            "x": 10,
            "y": 10,
            "delta_x": live_server.MAX_WHEEL_DELTA,
            "delta_y": -live_server.MAX_WHEEL_DELTA,
        }
    ]


def test_a_viewer_leaving_mid_input_is_an_ordinary_disconnect(
    runtime: Runtime,
    form_site: str,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The viewer closes the socket while their click waits on a busy page; the input's error
    reply finds nobody: one info line in the log, no traceback (issue 22, item 11)."""
    monkeypatch.setattr(live_server, "INPUT_TIMEOUT_S", 1.0, raising=False)  # the page is busy 6 s
    loaded = template(f"""
        settings: {{trace: off, timeout_s: 60}}
        steps:
          - {{action: navigate, url: "{form_site}/form"}}
          - {{id: ask, action: handoff, message: "wait", timeout_s: 120}}
    """)
    thread, done = _in_thread(runtime, loaded)
    run_id, link = _waiting_link(runtime, thread)
    server = runtime.runner.live.instance  # made by the wait above

    async def leave() -> None:
        http = aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True))
        async with http.get(link) as page:
            assert page.status == 200
        ws = await http.ws_connect(link.split("?", 1)[0] + "/ws")
        await ws.receive_json(timeout=WAIT)  # a frame: the socket is served
        await ws.send_json(_click(450, 120))  # the busy button
        await http.close()  # the tab closed: the connection drops, no closing handshake

    caplog.set_level(logging.DEBUG)
    asyncio.run(leave())
    handoff_id = runtime.store.handoffs.open_handoff(run_id).id  # type: ignore[union-attr]
    _wait_for(lambda: server._sockets.get(handoff_id) == set(), "the socket to be dropped")
    runtime.store.cancellation.request_cancel(run_id, reason="the test is over")
    thread.join(WAIT)
    assert done and done[0].status == "cancelled"
    tracebacks = [r for r in caplog.records if r.exc_info or "Traceback" in r.getMessage()]
    assert tracebacks == [], [r.getMessage() for r in tracebacks]
    assert any("live view viewer left" in r.getMessage() for r in caplog.records)
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING and "live" in r.name]


def _wait_for(holds: Any, what: str) -> None:
    from tests.support.polling import wait_until

    wait_until(lambda: holds() or None, WAIT, what)
