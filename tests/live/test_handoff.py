"""A run that meets a "captcha" waits for a person, who takes over through the live view.

Real Chromium against pages served here, an in-process runtime (SQLite store): the template's
``handoff:`` trigger makes the run wait; a test client opens the live view with its one-time
token, gets frames, clicks the captcha through the forwarded input as a person would, and the run
goes on and completes its later steps. A wrong or reused token is refused; a wait nobody answers
ends HUMAN_TIMEOUT with a failure snapshot; Give up ends HUMAN_GAVE_UP; a password field's keys
are not recorded; the wait does not count against the run's timeout_s.
"""

from __future__ import annotations

import asyncio
import base64
import threading
from collections.abc import Iterator
from typing import Any

import aiohttp
import pytest

from browserq.execute.runtime import Runtime
from browserq.report import build_report, render_html
from browserq.runner import RunOutcome
from tests.conftest import make_settings, template
from tests.support.http import html_pages, serve_http
from tests.support.polling import wait_until

HEAD = '<html><head><link rel="icon" href="data:,"></head><body style="margin:0">'
PAGES = {
    "/gate": HEAD + '<button id="captcha" style="position:absolute;left:100px;top:100px;width:200px;'
    'height:60px" onclick="this.remove();document.getElementById(\'content\').hidden=false">'
    "I am human</button><div id=\"content\" hidden>the protected text</div>"
    '<input id="pw" type="password" style="position:absolute;left:100px;top:300px">'
    '<input id="name" style="position:absolute;left:100px;top:360px"></body></html>',
}


@pytest.fixture(scope="module")
def site() -> Iterator[str]:
    with serve_http(html_pages(PAGES)) as host:
        yield f"http://{host}"


@pytest.fixture(scope="module")
def runtime(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runtime]:
    started = Runtime(make_settings(tmp_path_factory.mktemp("handoff"))).start()
    yield started
    started.stop()


def _in_thread(runtime: Runtime, loaded: Any) -> tuple[threading.Thread, list[RunOutcome]]:
    done: list[RunOutcome] = []
    thread = threading.Thread(target=lambda: done.append(runtime.run_loaded(loaded)), daemon=True)
    thread.start()
    return thread, done


def _waiting_link(runtime: Runtime, thread: threading.Thread) -> tuple[str, str]:
    """(run id, a fresh one-time link) once the run waits for a person."""
    def waiting() -> tuple[str, str] | None:
        assert thread.is_alive(), "the run ended without waiting"
        runs = [r for r in runtime.store.runs.list_runs(limit=5) if r.status == "waiting_for_human"]
        if not runs:
            return None
        link = runtime.store.handoffs.mint_live_token(runs[0].id, purpose="test", ttl_s=60)
        return (runs[0].id, link) if link else None

    return wait_until(waiting, 30, "the run to wait for a person")


async def _open(link: str) -> int:
    async with aiohttp.ClientSession() as session, session.get(link) as response:
        return response.status


async def _act(link: str, messages: list[dict[str, Any]]) -> dict[str, Any]:
    """Open the live view with ``link``, read a frame, send ``messages``; what came back."""
    seen: dict[str, Any] = {}
    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as http:
        async with http.get(link) as page:
            seen["status"], seen["html"] = page.status, await page.text()
            seen["csp"] = page.headers.get("Content-Security-Policy", "")
            seen["url"] = str(page.url)
        seen["reused"] = await _open(link)  # while the handoff is still open
        base = link.split("?", 1)[0]
        async with http.ws_connect(base + "/ws") as ws:
            frame = await ws.receive_json(timeout=10)
            seen["frame"] = base64.b64decode(frame["data"])
            for message in messages:
                await ws.send_json(message)
                await asyncio.sleep(0.3)
    return seen


def test_a_person_clicks_the_captcha_and_the_run_goes_on(runtime: Runtime, site: str) -> None:
    loaded = template(f"""
        settings: {{trace: off, timeout_s: 5}}
        handoff: {{when_present: "#captcha", timeout_s: 60}}
        steps:
          - {{action: navigate, url: "{site}/gate"}}
          - {{id: text, action: get, selector: "#content", into: text}}
    """)
    thread, done = _in_thread(runtime, loaded)
    run_id, link = _waiting_link(runtime, thread)
    handoff_id = runtime.store.handoffs.open_handoff(run_id).id  # type: ignore[union-attr]
    assert asyncio.run(_open(link.replace("token=", "token=x"))) == 403
    import time

    time.sleep(6)  # longer than timeout_s: waiting does not count against it
    seen = asyncio.run(_act(link, [{"type": "click", "x": 200, "y": 130}]))
    assert seen["status"] == 200 and "token" not in seen["url"]  # redirected to the token-free page
    assert "Continue" in seen["html"] and "script-src 'nonce-" in seen["csp"]
    assert seen["frame"][:2] == b"\xff\xd8"  # a JPEG
    assert seen["reused"] == 403  # one time only
    thread.join(30)
    [outcome] = done
    assert outcome.status == "completed", (outcome.error_code, outcome.error_message)
    assert outcome.outputs == {"text": "the protected text"}
    steps = runtime.store.steps.steps(run_id)
    assert [(s.step_path, s.action) for s in steps if "~" in s.step_path] == [
        ("0~handoff", "handoff"), ("0~handoff~input", "human_click")]
    click = next(s for s in steps if s.action == "human_click")
    assert click.inputs == {"x": 200, "y": 130, "button": "left"}
    [handoff] = runtime.store.handoffs.handoffs(run_id)
    assert (handoff.id, handoff.outcome, handoff.inputs) == (handoff_id, "condition", 1)
    statuses = [t.to_status for t in runtime.store.transitions.transitions(run_id)]
    assert statuses[-3:] == ["waiting_for_human", "running", "completed"]
    page = render_html(build_report(runtime.store, runtime.settings, run_id))
    people = page.split('id="people"', 1)[1].split("</section>", 1)[0]
    assert "absent &#39;#captcha&#39;" in people and "<td>condition</td>" in people and "<td>trigger</td>" in people


def test_nobody_comes_the_wait_times_out_with_a_snapshot(runtime: Runtime, site: str) -> None:
    loaded = template(f"""
        settings: {{trace: off}}
        steps:
          - {{action: navigate, url: "{site}/gate"}}
          - {{id: ask, action: handoff, message: "solve it", until: {{absent: "#captcha"}}, timeout_s: 1.5}}
          - {{action: get, selector: "#content", into: text}}
    """)
    outcome = runtime.run_loaded(loaded)
    assert (outcome.status, outcome.error_code, outcome.error_step_path) == ("failed", "HUMAN_TIMEOUT", "1")
    assert "solve it" in (outcome.error_message or "")
    kinds = {a.kind for a in runtime.store.steps.artifacts(outcome.run_id)}
    assert {"failure_screenshot", "dom"} <= kinds
    assert runtime.store.handoffs.handoffs(outcome.run_id)[0].outcome == "timeout"


def test_give_up_and_no_password_keys_in_the_record(runtime: Runtime, site: str) -> None:
    loaded = template(f"""
        settings: {{trace: off}}
        steps:
          - {{action: navigate, url: "{site}/gate"}}
          - {{id: ask, action: handoff, message: "log in for me", timeout_s: 60}}
    """)
    thread, done = _in_thread(runtime, loaded)
    run_id, link = _waiting_link(runtime, thread)
    asyncio.run(_act(link, [
        {"type": "click", "x": 150, "y": 310}, {"type": "text", "text": "hunter2"}, {"type": "key", "key": "Tab"},
        {"type": "click", "x": 150, "y": 370}, {"type": "text", "text": "ann"},
        {"type": "give_up"},
    ]))
    thread.join(30)
    [outcome] = done
    assert (outcome.status, outcome.error_code) == ("failed", "HUMAN_GAVE_UP")
    inputs = [s.inputs for s in runtime.store.steps.steps(run_id) if s.step_path == "1~input"]
    assert {"length": 3} in inputs  # no character typed is recorded, in any field
    assert {"length": 7, "password": True} in inputs and {"length": 1, "password": True} in inputs
    assert "hunter2" not in repr(runtime.store.steps.steps(run_id)) and "ann" not in repr(inputs)


def test_a_cancel_ends_the_wait_and_the_run(runtime: Runtime, site: str) -> None:
    loaded = template(f"""
        settings: {{trace: off}}
        steps:
          - {{action: navigate, url: "{site}/gate"}}
          - {{id: ask, action: handoff, message: "solve it", timeout_s: 120}}
    """)
    thread, done = _in_thread(runtime, loaded)
    run_id, _link = _waiting_link(runtime, thread)
    runtime.store.cancellation.request_cancel(run_id, reason="nobody is on call tonight")
    thread.join(30)
    [outcome] = done
    assert outcome.status == "cancelled"
    [handoff] = runtime.store.handoffs.handoffs(run_id)
    assert handoff.outcome == "cancelled" and handoff.ended_at is not None
    statuses = [t.to_status for t in runtime.store.transitions.transitions(run_id)]
    assert statuses[-2:] == ["waiting_for_human", "cancelled"]
    assert runtime.store.handoffs.mint_live_token(run_id, purpose="test", ttl_s=60) is None
