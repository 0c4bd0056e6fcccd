"""Resolving a needs_review run (issue 22, item 14): a real run ends needs_review (its side effect
reached the server, its answer was lost), then a person resolves it — completed, failed, or
retried from a step — on PostgreSQL and SQLite, the retry through the in-process runtime. The
unknown step never runs again unless the person says they checked."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler

import pytest

from browserq.execute.errors import ResolveRefused
from browserq.execute.resolve import Review, resolve_review
from browserq.execute.runtime import Runtime
from browserq.store.errors import NotInReview
from tests.conftest import template
from tests.support.http import serve_http

#: Step 1 sends an order; a run's first answer is lost (it throws after the server counted it).
ORDER = """
settings: {{trace: off, allow_eval: true, step_retries: 0, run_retries: 0}}
steps:
  - {{action: navigate, url: "http://{host}/"}}
  - id: send
    action: eval
    expression: "fetch('/send/${{run.id}}', {{method: 'POST'}}).then(r => r.text()).then(n => {{ if (n === '1') throw new Error('answer lost'); return n; }})"
    side_effect: true
    into: sent
  - {{action: eval, expression: "'read the confirmation'", into: confirmation}}
  - {{action: eval, expression: "'after'", into: last}}
"""


class Orders:
    """A shop that counts the orders it received (in all, and per run: it answers the run's)."""

    def __init__(self) -> None:
        self.count, self.lock, self.per_run = 0, threading.Lock(), dict[str, int]()

    def handler(self) -> type[BaseHTTPRequestHandler]:
        shop = self

        class Shop(BaseHTTPRequestHandler):
            def _answer(self, body: str) -> None:
                data = body.encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                self._answer("<title>shop</title><p>shop</p>")

            def do_POST(self) -> None:
                with shop.lock:
                    shop.count += 1
                    n = shop.per_run[self.path] = shop.per_run.get(self.path, 0) + 1
                self._answer(str(n))

            def log_message(self, *_args: object) -> None:
                return None

        return Shop


@pytest.fixture
def shop() -> Iterator[tuple[Orders, str]]:
    orders = Orders()
    with serve_http(orders.handler()) as host:
        yield orders, host


def _in_review(runtime: Runtime, host: str) -> str:
    outcome = runtime.run_loaded(template(ORDER.format(host=host)))
    assert (outcome.status, outcome.error_code, outcome.error_step_path) == (
        "needs_review",
        "OUTCOME_UNKNOWN",
        "1",
    )
    assert (
        f"browserq resolve {outcome.run_id} --completed|--failed|--retry-from STEP"
        in outcome.error_message
    )
    return outcome.run_id


def test_resolved_as_completed_or_failed_with_who_and_why(any_runtime: Runtime, shop) -> None:
    orders, host = shop
    store, settings = any_runtime.store, any_runtime.settings
    run_id = _in_review(any_runtime, host)
    with pytest.raises(ResolveRefused, match="goes with a retry"):
        resolve_review(store, settings, run_id, Review("completed", by="ana", retry_from="2"))
    done = resolve_review(
        store, settings, run_id, Review("completed", by="ana", reason="order 1 is in the shop")
    )
    assert (done.status, done.error_code, done.finished_at is not None) == ("completed", None, True)
    last = store.transitions.transitions(run_id)[-1]
    assert (last.from_status, last.to_status, last.worker) == ("needs_review", "completed", "ana")
    assert last.reason == "resolved by ana: completed; reason: order 1 is in the shop"
    with pytest.raises(NotInReview, match="is completed, not needs_review"):
        resolve_review(store, settings, run_id, Review("failed", by="ana"))

    other = _in_review(any_runtime, host)
    failed = resolve_review(store, settings, other, Review("failed", by="bo", reason="no order"))
    assert (failed.status, failed.error_code) == ("failed", "OUTCOME_UNKNOWN")
    assert store.transitions.transitions(other)[-1].reason == "resolved by bo: failed; reason: no order"
    assert orders.count == 2  # one order per run; resolving sent none


def test_retry_from_the_unknown_step_runs_it_again_only_when_the_person_checked(
    any_runtime: Runtime, shop
) -> None:
    orders, host = shop
    store, settings = any_runtime.store, any_runtime.settings
    run_id = _in_review(any_runtime, host)
    for start, refused in (
        ("1", "say so with --rerun-unknown"),
        ("0", "covered by the run's last checkpoint"),
        ("9", "has no step '9'"),
        ("2[1].0", "has no step"),
    ):
        with pytest.raises(ResolveRefused, match=refused):
            resolve_review(store, settings, run_id, Review("retry", by="ana", retry_from=start))
    assert (
        store.runs.get_run(run_id).status == "needs_review" and orders.count == 1
    )  # nothing written, nothing sent

    queued = resolve_review(
        store, settings, run_id, Review("retry", by="ana", retry_from="1", rerun_unknown=True)
    )
    assert queued.status == "queued"
    assert "run again (ana checked it had not happened)" in store.transitions.transitions(run_id)[-1].reason
    outcome = any_runtime.execute(run_id)
    assert outcome.status == "completed", outcome
    assert outcome.outputs["sent"] == "2" and outcome.outputs["last"] == "after"
    assert orders.count == 2  # the person's "it did not happen": sent once more


def test_retry_from_a_later_step_skips_the_unknown_one_as_the_person_decided(
    any_runtime: Runtime, shop
) -> None:
    orders, host = shop
    store, settings = any_runtime.store, any_runtime.settings
    run_id = _in_review(any_runtime, host)
    with pytest.raises(ResolveRefused, match="--rerun-unknown is for retrying from step 1 itself"):
        resolve_review(
            store, settings, run_id, Review("retry", by="ana", retry_from="3", rerun_unknown=True)
        )
    resolve_review(
        store, settings, run_id, Review("retry", by="ana", retry_from="3", reason="it went through")
    )
    assert "skipping step 1 (outcome unknown)" in store.transitions.transitions(run_id)[-1].reason
    outcome = any_runtime.execute(run_id)
    assert outcome.status == "completed", outcome
    assert outcome.outputs["last"] == "after" and "confirmation" not in outcome.outputs
    assert orders.count == 1  # never sent again
    latest = {s.step_path: s for s in store.steps.steps(run_id)}
    for path in ("1", "2"):
        assert latest[path].status == "skipped"
        assert latest[path].output == {
            "skipped": "skipped by ana's resolution (retry from step 3): it went through"
        }
    assert latest["3"].status == "succeeded"


def test_the_python_call_resolves_like_the_command(sqlite_runtime: Runtime, shop) -> None:
    import browserq
    from tests.conftest import producer_env

    _orders, host = shop
    run_id = _in_review(sqlite_runtime, host)
    with producer_env({"BROWSERQ_DATABASE_URL": sqlite_runtime.settings.database_url}):
        with pytest.raises(ResolveRefused, match="--rerun-unknown"):
            browserq.resolve_run(run_id, "retry", retry_from=1)
        assert browserq.resolve_run(run_id, "completed", reason="checked", by="cy") == "completed"
    last = sqlite_runtime.store.transitions.transitions(run_id)[-1]
    assert (last.to_status, last.worker, last.reason) == (
        "completed",
        "cy",
        "resolved by cy: completed; reason: checked",
    )


def test_a_run_whose_secrets_lived_only_in_its_process_cannot_be_retried(
    sqlite_runtime: Runtime, shop
) -> None:
    _orders, host = shop
    body = ORDER.format(host=host).replace(
        "settings:", "params:\n  token: {type: secret}\nsettings:", 1
    )
    outcome = sqlite_runtime.run_loaded(template(body), {"token": "s3cret-token"})
    assert outcome.status == "needs_review", outcome
    store, settings = sqlite_runtime.store, sqlite_runtime.settings
    with pytest.raises(ResolveRefused, match="secret params lived only in the memory"):
        resolve_review(store, settings, outcome.run_id, Review("retry", by="ana", retry_from="2"))
    assert store.runs.get_run(outcome.run_id).status == "needs_review"
