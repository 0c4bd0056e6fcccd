"""A person in a handoff whose worker dies (SIGKILL: an OOM kill, a lost host) is told so in the
page and moved to the run's new live view when it waits again on another worker.

Real workers (``browserq worker``, Redis broker, PostgreSQL store, the sweeper in the workers),
the live view on a fixed ``BROWSERQ_LIVE_VIEW_PORT`` (as the compose ``human`` service has it: the
worker that takes the run over listens at the same address), and the person's page in a real
Chromium driven by this test. The dead worker's page asks its own address where the run waits now
(``POST /live/<id>/next`` with the follow secret it was given), the surviving worker's live view
answers from the database with a fresh one-time link, the page goes there, the person clicks the
captcha in the new view and the run completes.
"""

from __future__ import annotations

import signal
import socket
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_worker_handover import GATE_TEMPLATE, site  # noqa: F401 (a fixture)
from tests.support.chromium import LaunchedChromium
from tests.support.polling import wait_until
from tests.support.processes import kill_group, stop
from tests.support.templates import write_templates
from tests.support.workers import (
    browserq_env,
    browserq_worker_argv,
    spawn_worker,
    wait_for_log,
    worker_settings,
)

pytestmark = pytest.mark.slow

MOVED_TEXT = "The run's worker stopped"
#: Reports what the page's notice (#moved) shows, as it changes (an init script: the page's CSP
#: does not apply to it, and it runs again in every page the person is moved to).
SAID_SCRIPT = """new MutationObserver(() => { const m = document.getElementById('moved');
  if (m && !m.hidden && m.textContent !== window.__said) { window.__said = m.textContent; window.bqSaid(m.textContent); }
}).observe(document, {subtree: true, childList: true, attributes: true, characterData: true});"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Fleet:
    """Two workers of one queue, a short lease (the sweeper takes a dead worker's run in seconds)."""

    def __init__(self, tmp: Path, pg_url: str) -> None:
        from tests.e2e.conftest import REDIS_URL

        self.tmp, self.queue, self.port = tmp, f"bq_death_{uuid.uuid4().hex[:8]}", free_port()
        templates = write_templates(tmp / "templates", {"death_gate": GATE_TEMPLATE})
        self.env = browserq_env(worker_settings(
            broker_url=REDIS_URL, database_url=pg_url, templates_dir=templates, artifacts_dir=tmp / "artifacts",
            queue=self.queue, secret_key=_secret(),
        ))
        self.env.update({
            "BROWSERQ_LIVE_VIEW_PORT": str(self.port), "BROWSERQ_LEASE_TTL_S": "4", "BROWSERQ_SWEEP_INTERVAL_S": "2",
            "BROWSERQ_REQUEUE_AFTER_S": "8", "BROWSERQ_LOG_LEVEL": "INFO",
        })
        self.procs: dict[str, Any] = {}
        self.logs: dict[str, Path] = {}

    def start(self, name: str) -> None:
        log = self.tmp / f"{name}.log"
        proc = spawn_worker(browserq_worker_argv(f"{name}-{self.queue}"), self.env, log)
        self.procs[name], self.logs[name] = proc, log
        wait_for_log(proc, log, lambda text: "ready." in text and "runtime started" in text, 120,
                     f"worker {name} to warm its browser")


def _secret() -> str:
    from tests.conftest import TEST_SECRET_KEY

    return TEST_SECRET_KEY


@pytest.fixture
def fleet(tmp_path: Path, pg_url: str) -> Iterator[Fleet]:
    from tests.conftest import producer_env

    f = Fleet(tmp_path, pg_url)
    try:
        with producer_env(f.env):
            yield f
    finally:
        for proc in f.procs.values():
            stop(proc, 60, group=True)


@pytest.fixture
def person(tmp_path: Path) -> Iterator[LaunchedChromium]:
    chromium = LaunchedChromium(tmp_path / "person")
    try:
        yield chromium
    finally:
        chromium.close()


async def _connected(page: Any, handoff_id: int) -> None:
    await page.wait_for_url(f"**/live/{handoff_id}", timeout=150_000)
    # locators, not wait_for_function: the page's CSP allows no eval, the test's included
    await page.locator("#status", has_text="connected").wait_for(timeout=60_000)
    await page.locator("#screen[src]").wait_for(state="attached", timeout=60_000)


async def _click_captcha(page: Any) -> None:
    """Click the captcha (at 200,130 of the run's page) on the shown frame, as a person does."""
    box = await page.locator("#screen").bounding_box()
    w, h = await page.evaluate("[size ? size.w : img.naturalWidth, size ? size.h : img.naturalHeight]")
    await page.mouse.click(box["x"] + 200 * box["width"] / w, box["y"] + 130 * box["height"] / h)


@pytest.mark.parametrize("how", ["sigkill", "sigterm"])
def test_the_person_is_moved_to_the_new_live_view_when_the_worker_dies(
    fleet: Fleet, person: LaunchedChromium, site: str, how: str  # noqa: F811
) -> None:
    """``sigkill``: the worker dies at once (the sweeper takes the run over); ``sigterm``: it is
    told to stop and hands the waiting run over (then exits), as a deploy does."""
    from browserq import run_template
    from browserq.store import Store

    store = Store(fleet.env["BROWSERQ_DATABASE_URL"])
    fleet.start("w1")
    result = run_template.delay("death_gate", params={"base_url": site})
    first = wait_until(lambda: store.handoffs.open_handoff(result.id), 90, "the run to wait for a person on w1")
    link = wait_until(lambda: store.handoffs.mint_live_token(result.id, purpose="test", ttl_s=300), 30, "a link")
    assert f":{fleet.port}/" in link
    fleet.start("w2")
    context = person.run(person.browser.new_context())
    said: list[str] = []  # every text the page's notice showed (the page may move on at once)
    person.run(context.expose_function("bqSaid", lambda text: said.append(text)))
    person.run(context.add_init_script(SAID_SCRIPT))
    page = person.run(context.new_page())
    seen: dict[str, Any] = {}
    try:
        person.run(page.goto(link))
        person.run(_connected(page, first.id))
        follow = person.run(page.evaluate("info.follow"))
        if how == "sigkill":
            kill_group(fleet.procs["w1"].pid)  # the worker, its children and its browser, at once
        else:
            fleet.procs["w1"].send_signal(signal.SIGTERM)
        seen["message"] = wait_until(lambda: next((s for s in said if MOVED_TEXT in s), None), 60,
                                     "the page to say the worker stopped")
        fleet.procs["w1"].wait(60)
        print("the page says:", " | ".join(dict.fromkeys(said)))
        second = wait_until(
            lambda: (h := store.handoffs.open_handoff(result.id)) is not None and h.id != first.id and h, 150,
            "the run to wait again on w2",
        )
        person.run(_connected(page, second.id), timeout=180)
        seen["moved_to"] = person.run(page.evaluate("location.href"))
        print("the page moved to:", seen["moved_to"])
        person.run(_click_captcha(page))
        outcome = result.get(timeout=120)
    finally:
        person.run(context.close())
        store.dispose()
    assert outcome["status"] == "completed" and outcome["outputs"] == {"text": "the protected text"}
    assert "another worker" in seen["message"]
    assert "token=" not in seen["moved_to"]  # redeemed and redirected, as any link
    logs = "".join(path.read_text(errors="replace") for path in fleet.logs.values())
    assert follow and follow not in logs and "token=" not in logs  # no secret in clear in the logs
    outcomes = [(h.outcome, h.kind) for h in Store(fleet.env["BROWSERQ_DATABASE_URL"]).handoffs.handoffs(result.id)]
    first_outcome = "interrupted" if how == "sigkill" else "handed_over"
    assert outcomes == [(first_outcome, "trigger"), ("condition", "trigger")], outcomes
