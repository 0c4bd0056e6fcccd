"""A worker told to stop (SIGTERM: a deploy) while its run waits for a person hands the run over
instead of waiting it out: real workers (prefork, Redis broker, PostgreSQL store), a webhook
receiver, the live view. The first worker's ready file goes at once and it exits long before the
wait's timeout; a second worker resumes the run, waits again and sends a fresh link; the person
solves the captcha through that link and the run completes. No worker loss is counted.
"""

from __future__ import annotations

import asyncio
import signal
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import TEST_SECRET_KEY, producer_env
from tests.e2e.conftest import REDIS_URL
from tests.live.test_handoff import PAGES, _act, _open
from tests.support.http import html_pages, serve_http
from tests.support.polling import wait_until
from tests.support.processes import stop
from tests.support.receiver import ALLOW_LOOPBACK_ENV, webhook_receiver
from tests.support.templates import write_templates
from tests.support.workers import (
    browserq_env,
    browserq_worker_argv,
    spawn_worker,
    wait_for_log,
    worker_settings,
)

pytestmark = pytest.mark.slow

WEBHOOK_SECRET = "whsec-handover-" + uuid.uuid4().hex
#: The wait may last 10 minutes: the stopping worker must not wait it out.
WAIT_S = 600
GATE_TEMPLATE = f"""
params:
  base_url: {{type: url, required: true}}
settings: {{trace: off, run_retries: 0, timeout_s: 30}}
handoff: {{when_present: "#captcha", timeout_s: {WAIT_S}, message: "Prove you are human, please"}}
steps:
  - {{action: navigate, url: "${{base_url}}/gate"}}
  - {{id: text, action: get, selector: "#content", into: text}}
"""


@pytest.fixture(scope="module")
def site() -> Iterator[str]:
    with serve_http(html_pages(PAGES)) as host:
        yield f"http://{host}"


def opens(link: str) -> bool:
    try:
        return asyncio.run(_open(link)) == 200
    except OSError:  # nobody listens there any more
        return False


class Workers:
    """Workers of one queue, each with its ready file and log."""

    def __init__(self, tmp: Path, pg_url: str) -> None:
        self.tmp = tmp
        self.queue = f"bq_handover_{uuid.uuid4().hex[:8]}"
        templates = write_templates(tmp / "templates", {"handover_gate": GATE_TEMPLATE})
        self.env = browserq_env(
            worker_settings(
                broker_url=REDIS_URL,
                database_url=pg_url,
                templates_dir=templates,
                artifacts_dir=tmp / "artifacts",
                queue=self.queue,
                secret_key=TEST_SECRET_KEY,
            )
        )
        self.env["BROWSERQ_WEBHOOK_SECRET"] = WEBHOOK_SECRET
        self.env.update(ALLOW_LOOPBACK_ENV)  # the test's receiver listens on loopback
        self.procs: list = []

    def start(self, name: str) -> tuple[object, Path, Path]:
        env = {**self.env, "BROWSERQ_READY_FILE": str(self.tmp / f"{name}.ready")}
        log = self.tmp / f"{name}.log"
        argv = browserq_worker_argv(f"{name}-{self.queue}")
        proc = spawn_worker(argv, env, log)
        self.procs.append(proc)
        wait_for_log(
            proc,
            log,
            lambda text: "ready." in text and "runtime started" in text,
            120,
            f"worker {name} to warm its browser",
        )
        ready = self.tmp / f"{name}.ready"
        wait_until(ready.exists, 30, f"worker {name}'s ready file")
        return proc, ready, log


@pytest.fixture
def workers(tmp_path: Path, pg_url: str) -> Iterator[Workers]:
    w = Workers(tmp_path, pg_url)
    try:
        with producer_env(w.env):
            yield w
    finally:
        for proc in w.procs:
            stop(proc, 60, group=True)


def test_a_stopping_worker_hands_a_waiting_run_to_another_worker(
    workers: Workers, site: str
) -> None:
    from browserq import run_template
    from browserq.store import Store

    first, first_ready, first_log = workers.start("w1")
    with webhook_receiver(WEBHOOK_SECRET) as receiver:
        result = run_template.delay("handover_gate", params={"base_url": site}, notify=receiver.url)
        [waiting] = wait_until(
            lambda: receiver.verified("waiting_for_human"), 60, "the first waiting_for_human"
        )
        old_link = waiting.data["live_url"]
        second, _, second_log = workers.start("w2")  # ready before the first one is told to stop

        first.send_signal(signal.SIGTERM)  # what `docker compose stop` does to the worker
        wait_until(lambda: not first_ready.exists(), 10, "the stopping worker's ready file to go")
        assert first.wait(timeout=WAIT_S / 4) == 0, first_log.read_text()[-3000:]

        both = wait_until(
            lambda: (
                len(receiver.verified("waiting_for_human")) == 2
                and receiver.verified("waiting_for_human")
            ),
            120,
            "the second worker to wait again",
        )
        new_link = both[1].data["live_url"]
        assert new_link != old_link
        assert not opens(old_link)  # the stopped worker's view is gone; its token opens nothing
        seen = asyncio.run(_act(new_link, [{"type": "click", "x": 200, "y": 130}]))
        assert seen["status"] == 200 and seen["frame"][:2] == b"\xff\xd8"
        outcome = result.get(timeout=90)
        assert outcome["status"] == "completed" and outcome["outputs"] == {
            "text": "the protected text"
        }
        assert second.poll() is None, second_log.read_text()[-3000:]

    store = Store(workers.env["BROWSERQ_DATABASE_URL"])
    try:
        run = store.runs.get_run(result.id)
        assert run.takeovers == 0, run  # a handover is no lost worker
        assert [(h.outcome, h.kind) for h in store.handoffs.handoffs(result.id)] == [
            ("handed_over", "trigger"),
            ("condition", "trigger"),
        ]
        transitions = store.transitions.transitions(result.id)
        statuses = [t.to_status for t in transitions]
        handed = statuses.index("retrying")
        assert statuses[handed - 1 :] == [
            "waiting_for_human",
            "retrying",
            "running",
            "waiting_for_human",
            "running",
            "completed",
        ], statuses
        assert transitions[handed].reason.startswith("handed over"), transitions[handed].reason
        assert {transitions[handed].worker, transitions[handed + 1].worker} != {None}
        assert transitions[handed].worker != transitions[-1].worker  # two workers ran it
    finally:
        store.dispose()
