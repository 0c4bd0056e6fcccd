"""Whatever a page returns, the run ends with a code and its records, and nothing too large or
unstorable reaches the database or the result.

Real Chromium against pages served here, on PostgreSQL and SQLite (``any_runtime``): NUL in
titles, text, inputs and error messages (PostgreSQL rejects it), lone surrogates (no UTF-8
encoder takes them), values JSON has no form for (NaN, BigInt, Map, Date, functions), circular
and deeply nested results, results over the size limits, and a database that refuses a write.
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Iterator
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

from browserq.execute.runtime import Runtime
from tests.conftest import make_settings, template
from tests.support.http import html_pages

NO_FAVICON = '<link rel="icon" href="data:,">'
PAGES: dict[str, str] = {
    # U+0000 and a lone surrogate set from script: the HTML parser would drop them from markup.
    "/nul": (
        f"<html><head>{NO_FAVICON}<title>t</title></head><body>"
        '<ul><li class="item"></li><li class="item"></li></ul><input id="field">'
        "<script>document.title = 'before\\u0000after';"
        "const items = document.querySelectorAll('.item');"
        "items[0].textContent = 'one\\u0000two'; items[1].textContent = 'lone\\ud800here';"
        "</script></body></html>"
    ),
    "/surrogate-dom": (
        f"<html><head>{NO_FAVICON}</head><body><p id=p></p><script>"
        "document.getElementById('p').textContent = 'dom\\ud800text\\u0000end'; console.log('log\\ud800\\u0000')"
        "</script></body></html>"
    ),
    "/surrogate-title": (
        f"<html><head>{NO_FAVICON}</head><body><script>document.title = 'x\\udc00y'</script></body></html>"
    ),
    "/csp": f"<html><head>{NO_FAVICON}<title>strict</title></head><body>csp</body></html>",
    "/fifty": f"<html><head>{NO_FAVICON}</head><body>{'f' * 50 * 1024}</body></html>",
    "/many": (
        f"<html><head>{NO_FAVICON}</head><body><script>"
        "for (let i = 0; i < 2000; i++) { const d = document.createElement('div');"
        " d.className = 'row'; d.textContent = String(i).padStart(100, 'r'); document.body.appendChild(d); }"
        "</script></body></html>"
    ),
}


def _csp(path: str) -> dict[str, str]:
    """``/csp`` allows no eval for the page's own scripts."""
    return {"Content-Security-Policy": "script-src 'self'; object-src 'none'"} if path == "/csp" else {}


_Pages = html_pages(PAGES, _csp)


@pytest.fixture(scope="module")
def pages() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Pages)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def run_eval(runtime: Runtime, expression: str, url: str | None = None) -> Any:
    navigate = f'  - {{action: navigate, url: "{url}"}}\n' if url else ""
    loaded = template(
        "settings: {allow_eval: true, trace: off}\nsteps:\n" + navigate
        + f"  - {{id: value, action: eval, expression: {json.dumps(expression)}, into: value}}\n"
    )
    return runtime.run_loaded(loaded)


def assert_ended_with_records(runtime: Runtime, outcome: Any) -> None:
    """The run's record is final and matches the outcome; every step attempt is finished."""
    run = runtime.store.runs.get_run(outcome.run_id)
    assert run is not None and run.status == outcome.status and run.status != "running"
    assert run.error_code == outcome.error_code
    assert (run.outputs or {}) == outcome.outputs
    steps = runtime.store.steps.steps(outcome.run_id)
    assert steps and all(s.status != "started" for s in steps), [(s.step_path, s.status) for s in steps]
    json.dumps(outcome.as_result(), allow_nan=False).encode("utf-8")  # the Celery result is plain JSON


def assert_browser_usable(runtime: Runtime, pid: int | None) -> None:
    after = run_eval(runtime, "6 * 7")
    assert after.status == "completed" and after.outputs == {"value": 42}
    assert runtime.pool.pid == pid and runtime.pool.connected


# --- NUL and lone surrogates anywhere -----------------------------------------------------------


def test_nul_and_lone_surrogates_in_titles_text_inputs_and_outputs(any_runtime: Runtime, pages: str) -> None:
    pid = any_runtime.pool.pid
    loaded = template(
        f"""
        settings: {{trace: off}}
        steps:
          - {{action: navigate, url: "{pages}/nul"}}
          - {{id: title, action: get, what: title, into: title}}
          - {{id: items, action: extract, selector: ".item", into: items}}
          - {{id: echo, action: fill, selector: "#field", value: "${{outputs.items.0}}"}}
          - {{action: navigate, url: "{pages}/surrogate-title"}}
          - {{id: title2, action: get, what: title, into: title2}}
        """
    )
    outcome = any_runtime.run_loaded(loaded)
    assert outcome.status == "completed", (outcome.error_code, outcome.error_message)
    title = outcome.outputs.pop("title")
    assert title in ("before\ufffdafter", "before after")  # Chromium's title getter may blank NUL itself
    assert outcome.outputs == {"items": ["one\ufffdtwo", "lone\ufffdhere"], "title2": "x\ufffdy"}
    outcome.outputs["title"] = title
    assert_ended_with_records(any_runtime, outcome)
    by_id = {s.step_id: s for s in any_runtime.store.steps.steps(outcome.run_id)}
    assert by_id["title2"].output == "x\ufffdy"
    assert by_id["echo"].inputs["value"] == "one\ufffdtwo"  # the step's inputs, too
    assert_browser_usable(any_runtime, pid)


def test_a_failure_snapshot_of_a_page_with_unstorable_characters_is_kept(any_runtime: Runtime, pages: str) -> None:
    """The failing step's DOM and console snapshots are written even when the page's text holds
    a lone surrogate (today the DOM snapshot is silently lost)."""
    loaded = template(
        f"""
        settings: {{trace: off}}
        steps:
          - {{action: navigate, url: "{pages}/surrogate-dom"}}
          - {{action: click, selector: "#missing", retries: 0, timeout_s: 1}}
        """
    )
    outcome = any_runtime.run_loaded(loaded)
    assert outcome.status == "failed" and outcome.error_code == "SELECTOR_NOT_FOUND", outcome.error_message
    assert_ended_with_records(any_runtime, outcome)
    artifacts = {a.kind: a for a in any_runtime.store.steps.artifacts(outcome.run_id)}
    assert {"dom", "console"} <= set(artifacts), sorted(artifacts)
    dom = any_runtime.artifacts.path_of(artifacts["dom"].path).read_text(encoding="utf-8")
    assert "dom\ufffdtext" in dom


@pytest.mark.parametrize(
    "expression",
    ["(() => { throw new Error('bad\\u0000thing') })()", "(() => { throw new Error('bad\\ud800thing') })()"],
    ids=["nul", "lone-surrogate"],
)
def test_unstorable_characters_in_an_error_message(any_runtime: Runtime, expression: str) -> None:
    pid = any_runtime.pool.pid
    outcome = run_eval(any_runtime, expression)
    assert outcome.status == "failed" and outcome.error_code == "EVAL_ERROR"
    assert "bad\ufffdthing" in outcome.error_message
    assert_ended_with_records(any_runtime, outcome)
    step = any_runtime.store.steps.steps(outcome.run_id)[-1]
    assert step.status == "failed" and "bad\ufffdthing" in step.error_message
    assert_browser_usable(any_runtime, pid)


def test_eval_still_works_on_a_page_whose_csp_forbids_eval(any_runtime: Runtime, pages: str) -> None:
    """The result is converted in the page; that must not need the page's permission to eval."""
    outcome = run_eval(any_runtime, "({title: document.title, n: [1, 2].length})", f"{pages}/csp")
    assert outcome.status == "completed", (outcome.error_code, outcome.error_message)
    assert outcome.outputs == {"value": {"title": "strict", "n": 2}}


# --- values JSON has no form for ---------------------------------------------------------------

CONVERTED = [
    ("'a\\ud800b\\u0000c'", "a\ufffdb\ufffdc"),
    ("[NaN, Infinity, -Infinity, undefined, () => 1, Symbol('s')]", [None] * 6),
    ("10n ** 5000n", "1" + "0" * 5000),
    ("[12n, -(2n ** 80n)]", [12, str(-(2**80))]),
    ("new Date(0)", "1970-01-01T00:00:00.000Z"),
    (
        "({m: new Map([[1, 'a']]), s: new Set([1, 2]), f() {}, u: undefined, r: /ab+c/g, e: new Error('x')})",
        {"m": [[1, "a"]], "s": [1, 2], "r": "/ab+c/g", "e": "Error: x"},
    ),
    ("(() => { const shared = {v: 1}; return [shared, shared] })()", [{"v": 1}, {"v": 1}]),
]


@pytest.mark.parametrize(("expression", "expected"), CONVERTED, ids=[
    "surrogate-and-nul", "nan-undefined-function-symbol", "bigint-5000-digits", "bigints",
    "date", "map-set-regexp-error", "shared-not-circular",
])
def test_eval_results_become_json(any_runtime: Runtime, expression: str, expected: Any) -> None:
    pid = any_runtime.pool.pid
    outcome = run_eval(any_runtime, expression)
    assert outcome.status == "completed", (outcome.error_code, outcome.error_message)
    assert outcome.outputs == {"value": expected}
    assert_ended_with_records(any_runtime, outcome)
    assert any_runtime.store.steps.steps(outcome.run_id)[-1].output == expected
    assert_browser_usable(any_runtime, pid)


@pytest.mark.parametrize(
    ("expression", "problem"),
    [
        ("(() => { const a = {x: 1, inner: {}}; a.inner.back = a; return a })()", "circular reference at $.inner.back"),
        ("(() => { let a = []; for (let i = 0; i < 5000; i++) a = [a]; return a })()", "nested deeper than 100 levels"),
    ],
    ids=["circular", "nested-5000-deep"],
)
def test_eval_results_that_are_not_data_fail_the_step(any_runtime: Runtime, expression: str, problem: str) -> None:
    pid = any_runtime.pool.pid
    outcome = run_eval(any_runtime, expression)
    assert outcome.status == "failed" and outcome.error_code == "OUTPUT_INVALID"
    assert problem in outcome.error_message
    assert_ended_with_records(any_runtime, outcome)
    step = any_runtime.store.steps.steps(outcome.run_id)[-1]
    assert (step.status, step.error_code, step.output) == ("failed", "OUTPUT_INVALID", None)
    assert_browser_usable(any_runtime, pid)


# --- size limits ---------------------------------------------------------------------------------


def _stored_bytes(runtime: Runtime, run_id: str) -> int:
    """How much JSON the run's records hold (run outputs, checkpoint, every step's output/inputs)."""
    run = runtime.store.runs.get_run(run_id)
    assert run is not None
    total = len(json.dumps(run.outputs)) + len(json.dumps(run.checkpoint))
    for step in runtime.store.steps.steps(run_id):
        total += len(json.dumps(step.output)) + len(json.dumps(step.inputs))
    return total


def test_an_eval_result_over_the_step_limit_is_refused_in_the_page(any_runtime: Runtime) -> None:
    """Default limit (10 MiB): a 12 MiB result fails OUTPUT_TOO_LARGE and is stored nowhere."""
    pid = any_runtime.pool.pid
    outcome = run_eval(any_runtime, "'x'.repeat(12 * 1024 * 1024)")
    assert outcome.status == "failed" and outcome.error_code == "OUTPUT_TOO_LARGE"
    assert "BROWSERQ_MAX_STEP_OUTPUT_BYTES=10,485,760" in outcome.error_message
    assert outcome.outputs == {}
    assert_ended_with_records(any_runtime, outcome)
    assert _stored_bytes(any_runtime, outcome.run_id) < 10_000
    assert len(json.dumps(outcome.as_result())) < 10_000
    assert_browser_usable(any_runtime, pid)


@pytest.fixture(scope="module", params=["postgresql", "sqlite"])
def small_limits(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runtime]:
    """A runtime with small output limits (64 KiB a step, 160 KiB a run), on both stores."""
    tmp: Path = tmp_path_factory.mktemp(f"limits-{request.param}")
    overrides: dict[str, Any] = {"max_step_output_bytes": 64 * 1024, "max_run_output_bytes": 160 * 1024}
    if request.param == "postgresql":
        overrides["database_url"] = request.getfixturevalue("pg_url")
    runtime = Runtime(make_settings(tmp, **overrides)).start()
    yield runtime
    runtime.stop()


def test_an_extract_over_the_step_limit_fails_and_limit_keeps_it_small(small_limits: Runtime, pages: str) -> None:
    pid = small_limits.pool.pid
    body = 'settings: {trace: off}\nsteps:\n  - {action: navigate, url: "%s/many"}\n' % pages
    big = small_limits.run_loaded(template(body + '  - {action: extract, selector: ".row", into: rows}\n'))
    assert big.status == "failed" and big.error_code == "OUTPUT_TOO_LARGE"
    assert "the extract result is at least" in big.error_message
    assert_ended_with_records(small_limits, big)
    assert _stored_bytes(small_limits, big.run_id) < 10_000
    limited = small_limits.run_loaded(
        template(body + '  - {action: extract, selector: ".row", limit: 100, into: rows}\n')
    )
    assert limited.status == "completed" and len(limited.outputs["rows"]) == 100
    assert small_limits.pool.pid == pid


def test_the_run_outputs_stay_within_the_run_limit(small_limits: Runtime, pages: str) -> None:
    """An extract accumulating 50 KiB a pass, each within the step limit: the fourth pass would
    take the run's outputs past 160 KiB."""
    loaded = template(
        f"""
        settings: {{trace: off}}
        steps:
          - {{action: navigate, url: "{pages}/fifty"}}
          - repeat:
              max: 5
              steps:
                - {{action: extract, selector: "body", into: parts}}
        """
    )
    outcome = small_limits.run_loaded(loaded)
    assert outcome.status == "failed" and outcome.error_code == "OUTPUT_TOO_LARGE"
    assert "BROWSERQ_MAX_RUN_OUTPUT_BYTES=163,840" in outcome.error_message
    assert_ended_with_records(small_limits, outcome)
    result = json.dumps(outcome.as_result())
    assert len(result) <= 160 * 1024 + 2_000
    assert 100 * 1024 < len(json.dumps(small_limits.store.runs.get_run(outcome.run_id).outputs)) <= 160 * 1024


# --- a database that refuses a write -----------------------------------------------------------


def _refuse(runtime: Runtime, table: str, when: str, name: str, *, inserts: bool = False) -> list[str]:
    """DDL for a trigger that makes the database itself refuse matching updates of ``table``
    (``inserts``: matching inserts too — a buffered step's start and end are one insert)."""
    if runtime.store.dialect == "postgresql":
        ops = "INSERT OR UPDATE" if inserts else "UPDATE"
        return [
            f"CREATE OR REPLACE FUNCTION {name}() RETURNS trigger AS $$ BEGIN "
            f"IF {when} THEN RAISE EXCEPTION 'refused by the test trigger'; END IF; "
            "RETURN NEW; END $$ LANGUAGE plpgsql",
            f"CREATE TRIGGER {name} BEFORE {ops} ON {table} FOR EACH ROW EXECUTE FUNCTION {name}()",
        ]
    ops = [("", "UPDATE")] + ([("_insert", "INSERT")] if inserts else [])
    return [
        f"CREATE TRIGGER {name}{suffix} BEFORE {op} ON {table} WHEN {when} "
        "BEGIN SELECT RAISE(ABORT, 'refused by the test trigger'); END"
        for suffix, op in ops
    ]


@pytest.fixture
def refusing(any_runtime: Runtime) -> Iterator[Runtime]:
    """The database refuses to complete runs named ``refuse_end…`` and to finish steps with id
    ``refused`` successfully (real triggers, dropped afterwards)."""
    statements = _refuse(any_runtime, "runs", "NEW.status = 'completed' AND NEW.template_name LIKE 'refuse_end%'",
                         "bq_test_refuse_end")
    statements += _refuse(any_runtime, "step_attempts", "NEW.status = 'succeeded' AND NEW.step_id = 'refused'",
                          "bq_test_refuse_step", inserts=True)
    _drop_triggers(any_runtime)
    with any_runtime.store.engine.begin() as conn:
        for statement in statements:
            conn.execute(text(statement))
    yield any_runtime
    _drop_triggers(any_runtime)


def _drop_triggers(runtime: Runtime) -> None:
    pg = runtime.store.dialect == "postgresql"
    with runtime.store.engine.begin() as conn:
        for name, table in (("bq_test_refuse_end", "runs"), ("bq_test_refuse_step", "step_attempts"),
                            ("bq_test_refuse_step_insert", "step_attempts")):
            conn.execute(text(f"DROP TRIGGER IF EXISTS {name}" + (f" ON {table}" if pg else "")))
            if pg:
                conn.execute(text(f"DROP FUNCTION IF EXISTS {name}()"))


def test_a_refused_end_write_ends_the_run_store_write_failed(refusing: Runtime, pages: str) -> None:
    loaded = template(
        f"""
        name: refuse_end_{uuid.uuid4().hex[:8]}
        version: 1.0.0
        settings: {{trace: off}}
        steps:
          - {{action: navigate, url: "{pages}/nul"}}
          - {{action: get, what: title, into: title}}
        """
    )
    outcome = refusing.run_loaded(loaded)
    assert outcome.status == "failed" and outcome.error_code == "STORE_WRITE_FAILED"
    assert "refused" in outcome.error_message and "had ended completed" in outcome.error_message
    assert_ended_with_records(refusing, outcome)
    assert [s.status for s in refusing.store.steps.steps(outcome.run_id)] == ["succeeded", "succeeded"]


@pytest.mark.parametrize("flush_ms", [0, 60_000], ids=["unbuffered", "buffered"])
def test_a_refused_step_record_ends_the_run_with_the_step_recorded(
    refusing: Runtime, pages: str, flush_ms: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Unbuffered, the refusal surfaces at the refused step, which ends the run there. Buffered
    (held until the run's end: no background flush within it), it surfaces at the flush that
    wrote it: the steps after it ran and are recorded too, and the run still ends
    STORE_WRITE_FAILED with the refused step recorded as such (its message names it)."""
    monkeypatch.setattr(refusing.settings, "journal_flush_ms", flush_ms)
    pid = refusing.pool.pid
    loaded = template(
        f"""
        settings: {{trace: off}}
        steps:
          - {{action: navigate, url: "{pages}/nul"}}
          - {{id: refused, action: get, what: title, into: title}}
          - {{action: get, what: url, into: url}}
        """
    )
    outcome = refusing.run_loaded(loaded)
    assert outcome.status == "failed" and outcome.error_code == "STORE_WRITE_FAILED"
    assert "record of step 1 " in outcome.error_message and "had succeeded" in outcome.error_message
    assert_ended_with_records(refusing, outcome)
    steps = [(s.step_id, s.status, s.error_code) for s in refusing.store.steps.steps(outcome.run_id)]
    if flush_ms == 0:
        assert outcome.error_step_path == "1"
        assert steps == [(None, "succeeded", None), ("refused", "failed", "STORE_WRITE_FAILED")]
    else:
        assert steps == [
            (None, "succeeded", None), ("refused", "failed", "STORE_WRITE_FAILED"), (None, "succeeded", None),
        ]
    assert_browser_usable(refusing, pid)


# --- a run whose execution crashes is not re-sent forever ---------------------------------------


def _recorded(runtime: Runtime, body: str) -> str:
    return runtime.submit_loaded(template(body), {}).run_id


def test_an_execution_that_crashes_twice_fails_instead_of_looping(any_runtime: Runtime) -> None:
    """A run whose stored checkpoint cannot be read crashes every execution: the first crash is
    retried later, the second fails the run; re-sending it again changes nothing."""
    run_id = _recorded(any_runtime, 'settings: {trace: off}\nsteps:\n  - {action: wait, ms: 1}')
    with any_runtime.store.engine.begin() as conn:
        conn.execute(text("UPDATE runs SET checkpoint = :c WHERE id = :id"),
                     {"c": json.dumps({"garbage": True}), "id": run_id})
    first = any_runtime.execute(run_id)
    assert type(first).__name__ == "RetryLater", first
    run = any_runtime.store.runs.get_run(run_id)
    assert run.status == "retrying" and run.lease_owner is None
    second = any_runtime.execute(run_id)
    assert second.status == "failed" and second.error_code == "EXECUTION_CRASHED"
    assert "crashed 2 time(s)" in second.error_message and "KeyError" in second.error_message
    run = any_runtime.store.runs.get_run(run_id)
    assert run.status == "failed" and run.error_code == "EXECUTION_CRASHED"
    reasons = [t.reason for t in any_runtime.store.transitions.transitions(run_id)]
    assert sum(r.startswith("execution crashed") for r in reasons) == 2
    third = any_runtime.execute(run_id)  # a late duplicate delivery
    assert (third.status, third.error_code) == ("failed", "EXECUTION_CRASHED")
    assert len(any_runtime.store.transitions.transitions(run_id)) == len(reasons)
    assert run_id not in {r.id for r in any_runtime.store.leases.stuck_runs(queued_older_than_s=0)}
    assert_browser_usable(any_runtime, any_runtime.pool.pid)


def test_runs_the_sweeper_rescues_from_vanished_workers_hit_the_poison_cap(any_runtime: Runtime) -> None:
    """A run whose worker dies in every execution (e.g. killed mid-write) and whose lease the
    sweeper finds expired is re-enqueued (running → queued, as ``sweep_stuck_runs`` does); each
    rescue counts as a lost worker, so after BROWSERQ_MAX_WORKER_LOSSES it fails as poison."""
    store = any_runtime.store
    run_id = _recorded(any_runtime, 'settings: {trace: off}\nsteps:\n  - {action: wait, ms: 1}')
    for _ in range(any_runtime.settings.max_worker_losses + 1):
        store.leases.acquire_lease(run_id, owner="elsewhere:1:1", ttl_s=0.001)  # a worker on another host
        store.transitions.transition(run_id, "queued", reason="its worker stopped renewing the lease; re-enqueued by the sweeper")
    outcome = any_runtime.execute(run_id)
    assert outcome.status == "failed" and outcome.error_code == "WORKER_LOST_REPEATEDLY"
    assert store.runs.get_run(run_id).status == "failed"
