"""A person in the loop through a real worker (prefork, Redis broker, PostgreSQL store), as in
production: the run is sent with ``run_template.delay(..., notify=…)``; the page shows a
"captcha", so the template's ``handoff:`` trigger makes the run wait; the webhook receiver served
here gets ``waiting_for_human`` with a one-time live-view link, signed; the test opens that link as
a person would, sees a frame, clicks the captcha through the forwarded input, and the run goes on
and completes its later steps; the receiver gets ``completed`` once and refuses a tampered copy.
"""

from __future__ import annotations

import asyncio
import sys
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import TEST_SECRET_KEY, producer_env
from tests.e2e.conftest import REDIS_URL
from tests.live.test_handoff import PAGES, _act, _open
from tests.support.cli_zygote import browserq_command
from tests.support.http import html_pages, serve_http
from tests.support.polling import wait_until
from tests.support.processes import stop
from tests.support.receiver import ALLOW_LOOPBACK_ENV, Receiver, webhook_receiver
from tests.support.templates import write_templates
from tests.support.workers import browserq_env, spawn_worker, wait_for_log, worker_settings

pytestmark = pytest.mark.slow

WEBHOOK_SECRET = "whsec-e2e-" + uuid.uuid4().hex
GATE_TEMPLATE = """
params:
  base_url: {type: url, required: true}
settings: {trace: off, run_retries: 0, timeout_s: 30}
handoff: {when_present: "#captcha", timeout_s: 120, message: "Prove you are human, please"}
steps:
  - {action: navigate, url: "${base_url}/gate"}
  - {id: text, action: get, selector: "#content", into: text}
"""
#: A handoff whose ``until`` is rendered with a secret (issue 22, item 2).
SECRET_UNTIL_TEMPLATE = """
params:
  base_url: {type: url, required: true}
  password: {type: secret, required: true}
settings: {trace: off, run_retries: 0, timeout_s: 30}
steps:
  - {action: navigate, url: "${base_url}/gate"}
  - {id: ask, action: handoff, message: "Log in, please", until: {url: "**/done?k=${password}"}, timeout_s: 120}
"""
UNTIL_SECRET = "Open-Sésame_4u!"


@dataclass
class HumanWorker:
    env: dict[str, str]
    log: Path


@pytest.fixture(scope="module")
def site() -> Iterator[str]:
    with serve_http(html_pages(PAGES)) as host:
        yield f"http://{host}"


@pytest.fixture(scope="module")
def worker(tmp_path_factory: pytest.TempPathFactory, pg_url: str) -> Iterator[HumanWorker]:
    tmp = tmp_path_factory.mktemp("human-loop")
    queue = f"bq_human_{uuid.uuid4().hex[:8]}"
    templates = write_templates(tmp / "templates", {"human_gate": GATE_TEMPLATE,
                                                              "human_secret_until": SECRET_UNTIL_TEMPLATE})
    env = browserq_env(worker_settings(broker_url=REDIS_URL, database_url=pg_url, templates_dir=templates,
                                       artifacts_dir=tmp / "artifacts", queue=queue, secret_key=TEST_SECRET_KEY))
    env["BROWSERQ_WEBHOOK_SECRET"] = WEBHOOK_SECRET
    env.update(ALLOW_LOOPBACK_ENV)  # the receiver served here is on loopback
    log = tmp / "worker.log"
    proc = spawn_worker([sys.executable, "-m", "browserq.cli", "worker", "-c", "1", "-n", f"{queue}@%h",
                         "--without-gossip", "--without-mingle"], env, log)
    try:
        wait_for_log(proc, log, lambda text: "ready." in text and "runtime started" in text, 120,
                     "the worker to warm its browser")
        with producer_env(env):
            yield HumanWorker(env, log)
    finally:
        stop(proc, 60, group=True)


def test_a_person_solves_the_captcha_through_the_live_view_and_the_run_completes(
    worker: HumanWorker, site: str,
) -> None:
    from browserq import run_template
    from browserq.store import Store

    with webhook_receiver(WEBHOOK_SECRET) as receiver:
        result = run_template.delay("human_gate", params={"base_url": site}, notify=receiver.url)
        [waiting] = wait_until(lambda: receiver.verified("waiting_for_human"), 60,
                               "the waiting_for_human webhook")
        body = waiting.data
        assert body["run_id"] == result.id and body["result"]["status"] == "waiting_for_human"
        assert body["handoff"]["message"] == "Prove you are human, please"
        assert body["handoff"]["until"] == "absent '#captcha'"
        link = body["live_url"]
        assert link.startswith("http://127.0.0.1:") and "token=" in link
        # Flower's progress meta has a link of its own (another one-time token)
        meta = wait_until(lambda: result.info if result.state == "PROGRESS"
                          and result.info.get("status") == "waiting_for_human" else None, 30, "the waiting meta")
        assert meta["live_url"] and meta["live_url"] != link and meta["message"] == "Prove you are human, please"
        cli = browserq_command(["live", result.id[:10]], env=worker.env, timeout=60)
        assert cli.returncode == 0 and cli.stdout.strip().startswith(link.split("?")[0] + "?token="), cli.stderr
        assert asyncio.run(_open(link.replace("token=", "token=forged"))) == 403
        seen = asyncio.run(_act(link, [{"type": "click", "x": 200, "y": 130}]))
        assert seen["status"] == 200 and seen["frame"][:2] == b"\xff\xd8" and seen["reused"] == 403
        outcome = result.get(timeout=60)
        assert outcome["status"] == "completed" and outcome["outputs"] == {"text": "the protected text"}
        [completed] = wait_until(lambda: receiver.verified("completed"), 30, "the completed webhook")
        assert completed.data["result"]["outputs"] == {"text": "the protected text"}
        _tampered_copy_is_refused(receiver, completed.headers, completed.body)
        assert len(receiver.verified("waiting_for_human")) == 1 and len(receiver.verified("completed")) == 1

    store = Store(worker.env["BROWSERQ_DATABASE_URL"])
    try:
        [handoff] = store.handoffs.handoffs(result.id)
        assert (handoff.kind, handoff.outcome, handoff.inputs) == ("trigger", "condition", 1)
        assert [d.status for d in store.webhooks.webhook_deliveries(result.id)] == ["delivered", "delivered"]
        statuses = [t.to_status for t in store.transitions.transitions(result.id)]
        assert statuses[-3:] == ["waiting_for_human", "running", "completed"]
    finally:
        store.dispose()


def test_a_secret_in_until_reaches_no_sink_in_clear(worker: HumanWorker, site: str, tmp_path: Path) -> None:
    """``until: {url: "**/done?k=${password}"}``: the handoff record, the webhook, Flower's meta,
    the live view's page, ``show`` (text and JSON) and ``report`` show it masked, in no encoding
    in clear."""
    from browserq import run_template
    from browserq.store import Store
    from tests.secrets.forms import find_leaks, secret_forms

    masked = "url '**/done?k=[secret:password]'"
    with webhook_receiver(WEBHOOK_SECRET) as receiver:
        result = run_template.delay("human_secret_until", params={"base_url": site, "password": UNTIL_SECRET},
                                    notify=receiver.url)
        [waiting] = wait_until(lambda: receiver.verified("waiting_for_human"), 60, "the waiting_for_human webhook")
        assert waiting.data["handoff"]["until"] == masked
        meta = wait_until(lambda: result.info if result.state == "PROGRESS"
                          and result.info.get("status") == "waiting_for_human" else None, 30, "the waiting meta")
        assert meta["until"] == masked
        seen = asyncio.run(_act(waiting.data["live_url"], [{"type": "continue"}]))
        assert "**/done?k=[secret:password]" in seen["html"]
        assert result.get(timeout=60)["status"] == "completed"
    store = Store(worker.env["BROWSERQ_DATABASE_URL"])
    try:
        [handoff] = store.handoffs.handoffs(result.id)
        [step] = [s for s in store.steps.steps(result.id) if s.step_path == "1"]
    finally:
        store.dispose()
    assert handoff.until == masked and step.inputs["until"] == masked
    commands = (["show", result.id], ["show", result.id, "--json"], ["report", result.id, "-o", str(tmp_path / "report.html")])
    cli = {args[0] + " ".join(args[2:]): browserq_command(args, env=worker.env, timeout=60, cwd=tmp_path)
           for args in commands}
    assert all(done.returncode == 0 for done in cli.values()), {k: v.stderr[-500:] for k, v in cli.items()}
    assert "[secret:password]" in cli["show"].stdout and "[secret:password]" in cli["show--json"].stdout
    report = (tmp_path / "report.html").read_bytes()
    assert b"[secret:password]" in report
    blobs = [("webhook", waiting.body), ("meta", repr(meta).encode()), ("live view", seen["html"].encode()),
             ("handoffs.until", handoff.until.encode()), ("step inputs", repr(step.inputs).encode()),
             ("report", report)] + [(name, done.stdout.encode()) for name, done in cli.items()]
    assert find_leaks(blobs, secret_forms(UNTIL_SECRET)) == []


def _tampered_copy_is_refused(receiver: Receiver, headers: dict[str, str], body: bytes) -> None:
    """A body changed in transit (same signature headers) is refused by the receiver's check."""
    forged = body.replace(b"the protected text", b"something else")
    request = urllib.request.Request(receiver.url, data=forged, method="POST", headers={
        "Content-Type": "application/json", "X-Browserq-Timestamp": headers["X-Browserq-Timestamp"],
        "X-Browserq-Signature": headers["X-Browserq-Signature"]})
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=10)
    assert refused.value.code == 401
    assert receiver.got[-1].refusal and "does not match" in receiver.got[-1].refusal
