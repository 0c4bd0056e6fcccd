"""``BROWSERQ_LIVE_VIEW_WHILE_RUNNING``: a running run is shown in the live view, view only.

A person with a one-time link sees the page while the steps run; their input is refused with a
reason and never reaches the page; the link stops working when the run's execution ends, and
the watch leaves no handoff in ``show``'s list nor a wait in the run's history.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from typing import Any

import aiohttp
import pytest

from browserq.execute.runtime import Runtime
from browserq.runner import RunOutcome
from tests.conftest import make_settings, template
from tests.live import test_handoff
from tests.support.polling import wait_until

site = test_handoff.site  # the fixture that serves the "captcha" page


@pytest.fixture(scope="module")
def runtime(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runtime]:
    started = Runtime(make_settings(tmp_path_factory.mktemp("watch"), live_view_while_running=True)).start()
    yield started
    started.stop()


async def _watch(link: str) -> dict[str, Any]:
    """Open the view, read a frame, try a click; what came back."""
    seen: dict[str, Any] = {}
    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as http:
        async with http.get(link) as page:
            seen["status"], seen["html"] = page.status, await page.text()
        async with http.ws_connect(link.split("?", 1)[0] + "/ws") as ws:
            seen["frame"] = (await ws.receive_json(timeout=10))["type"]
            await ws.send_json({"type": "click", "x": 200, "y": 130})
            while (message := await ws.receive_json(timeout=10))["type"] != "error":
                pass
            seen["refusal"] = message["message"]
    return seen


def test_a_running_run_is_shown_view_only_until_its_execution_ends(runtime: Runtime, site: str) -> None:
    loaded = template(f"""
        settings: {{trace: off}}
        steps:
          - {{action: navigate, url: "{site}/gate"}}
          - {{action: wait, ms: 2500}}
          - {{id: still, action: get, what: count, selector: "#captcha", into: captchas}}
    """)
    done: list[RunOutcome] = []
    thread = threading.Thread(target=lambda: done.append(runtime.run_loaded(loaded)), daemon=True)
    thread.start()

    def link() -> tuple[str, str] | None:
        runs = [r for r in runtime.store.runs.list_runs(limit=5) if r.status == "running"]
        minted = runtime.store.handoffs.mint_live_token(runs[0].id, purpose="test", ttl_s=60) if runs else None
        return (runs[0].id, minted) if minted else None

    run_id, url = wait_until(link, 30, "a link to the running run's view")
    seen = asyncio.run(_watch(url))
    assert seen["status"] == 200 and "is running" in seen["html"] and "View only" in seen["html"]
    assert seen["frame"] == "frame" and "view only" in seen["refusal"]
    thread.join(30)
    [outcome] = done
    assert outcome.status == "completed" and outcome.outputs == {"captchas": 1}  # the click never landed
    [watch] = runtime.store.handoffs.handoffs(run_id)
    assert (watch.kind, watch.outcome) == ("watch", "ended")
    assert runtime.store.handoffs.mint_live_token(run_id, purpose="test", ttl_s=60) is None
    assert "waiting_for_human" not in [t.to_status for t in runtime.store.transitions.transitions(run_id)]
    assert not any("~input" in s.step_path for s in runtime.store.steps.steps(run_id))
