"""Tool errors stay step errors; guards keep records intact; runs never see each other."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from browserq.execute.runtime import Runtime
from tests.conftest import template


def test_200_failing_evals_leave_the_browser_and_other_runs_alone(pg_runtime: Runtime, demo) -> None:
    """Tool errors are step errors: same browser PID, no relaunch, concurrent runs unaffected."""
    pid_before = pg_runtime.pool.pid
    launches_before = pg_runtime.pool.launches
    failing = template(
        """
        settings: {allow_eval: true, trace: off}
        steps:
          - {action: navigate, url: "%s/widgets"}
          - repeat:
              max: 200
              steps:
                - action: eval
                  expression: "(() => { throw new Error('boom ' + Math.random()) })()"
                  continue_on_error: true
          - {action: eval, expression: "1 + 1", into: still_alive}
        """
        % demo.url
    )
    healthy = template(
        """
        settings: {allow_eval: true, trace: off}
        steps:
          - {action: navigate, url: "%s/quotes/"}
          - {action: eval, expression: "document.querySelectorAll('.quote').length", into: n}
        """
        % demo.url
    )
    with ThreadPoolExecutor(1) as pool:
        future = pool.submit(pg_runtime.run_loaded, failing)
        concurrent = []
        while not future.done() or not concurrent:
            concurrent.append(pg_runtime.run_loaded(healthy))
        outcome = future.result()
    assert outcome.status == "completed" and outcome.outputs["still_alive"] == 2
    evals = [s for s in pg_runtime.store.steps.steps(outcome.run_id) if s.action == "eval"]
    assert len(evals) == 201
    assert [s.error_code for s in evals[:200]] == ["EVAL_ERROR"] * 200
    assert all(s.attempt == 1 for s in evals)  # EVAL_ERROR is permanent: never retried in place
    assert "boom" in evals[0].error_message
    assert all(o.status == "completed" and o.outputs["n"] == 10 for o in concurrent)
    # A run whose eval failure ends it, 20 times in a row, on the same browser.
    ending = template(
        'settings: {allow_eval: true, trace: off}\nsteps:\n  - {action: eval, expression: "window.nope()"}'
    )
    assert {pg_runtime.run_loaded(ending).error_code for _ in range(20)} == {"EVAL_ERROR"}
    assert pg_runtime.pool.pid == pid_before and pid_before is not None
    assert pg_runtime.pool.launches == launches_before
    assert pg_runtime.pool.connected and pg_runtime.pool.open_contexts == 0


def test_two_runs_on_one_worker_share_no_storage(any_runtime: Runtime, demo) -> None:
    write = template(
        """
        settings: {allow_eval: true}
        steps:
          - {action: navigate, url: "%s/storage"}
          - action: eval
            expression: >-
              (async () => {
                document.cookie = 'run1=yes; path=/; max-age=3600';
                localStorage.setItem('run1', 'yes');
                await new Promise((resolve, reject) => {
                  const req = indexedDB.open('run1db', 1);
                  req.onupgradeneeded = () => req.result.createObjectStore('kv');
                  req.onsuccess = () => {
                    const tx = req.result.transaction('kv', 'readwrite');
                    tx.objectStore('kv').put('yes', 'run1');
                    tx.oncomplete = () => resolve(true);
                    tx.onerror = () => reject(tx.error);
                  };
                  req.onerror = () => reject(req.error);
                });
                const cache = await caches.open('run1cache');
                await cache.put('/run1', new Response('cached by run 1'));
                await navigator.serviceWorker.register('/sw.js');
                await navigator.serviceWorker.ready;
                return true;
              })()
            into: written
        """
        % demo.url
    )
    read = template(
        """
        settings: {allow_eval: true}
        steps:
          - {action: navigate, url: "%s/storage"}
          - action: eval
            expression: >-
              (async () => ({
                cookie: document.cookie,
                local: localStorage.getItem('run1'),
                databases: (await indexedDB.databases()).map(d => d.name),
                caches: await caches.keys(),
                workers: (await navigator.serviceWorker.getRegistrations()).length,
              }))()
            into: seen
        """
        % demo.url
    )
    first = any_runtime.run_loaded(write)
    assert first.status == "completed" and first.outputs["written"] is True
    same_run_check = any_runtime.run_loaded(read)
    seen = same_run_check.outputs["seen"]
    assert "run1" not in seen["cookie"]
    assert seen["local"] is None
    assert "run1db" not in seen["databases"]
    assert "run1cache" not in seen["caches"] and seen["workers"] == 0


def test_url_guards_fail_the_run_with_records_intact(any_runtime: Runtime, demo) -> None:
    loaded = template(
        """
        params:
          target: {type: string, required: true}
        settings: {allowed_domains: [127.0.0.1]}
        steps:
          - {action: navigate, url: "%s/quotes/"}
          - {action: navigate, url: "${target}"}
        """
        % demo.url
    )
    outcome = any_runtime.run_loaded(loaded, {"target": "javascript:alert(1)"})
    assert (outcome.status, outcome.error_code) == ("failed", "URL_DENIED")
    outcome = any_runtime.run_loaded(loaded, {"target": demo.url.replace("127.0.0.1", "localhost")})
    assert (outcome.status, outcome.error_code) == ("failed", "DOMAIN_DENIED")
    steps = any_runtime.store.steps.steps(outcome.run_id)
    assert [s.status for s in steps] == ["succeeded", "failed"]
    assert steps[1].retryable is False


def test_interpolation_reads_earlier_outputs(any_runtime: Runtime, demo) -> None:
    loaded = template(
        """
        steps:
          - {action: navigate, url: "%s/quotes/"}
          - {action: get, what: attribute, selector: "li.next a", attribute: href, into: next}
          - {action: navigate, url: "%s${outputs.next}"}
          - {action: get, what: url, into: landed}
        """
        % (demo.url, demo.url)
    )
    outcome = any_runtime.run_loaded(loaded)
    assert outcome.status == "completed", outcome
    assert outcome.outputs["landed"] == f"{demo.url}/quotes/page/2/"


def test_values_built_at_run_time_are_checked_like_literal_ones(any_runtime: Runtime, demo) -> None:
    loaded = template(
        """
        params:
          sel: {type: string, required: true}
          shot: {type: string, required: true}
        steps:
          - {action: navigate, url: "%s/quotes/"}
          - {action: screenshot, name: "${shot}"}
          - {action: click, selector: "${sel}"}
        """
        % demo.url
    )
    outcome = any_runtime.run_loaded(loaded, {"sel": "a", "shot": "../../escape.png"})
    assert (outcome.status, outcome.error_code, outcome.error_step_path) == ("failed", "PATH_DENIED", "1")
    assert not list(any_runtime.settings.artifacts_dir.parent.glob("escape.png"))
    outcome = any_runtime.run_loaded(loaded, {"sel": "a" * 5000, "shot": "ok.png"})
    assert (outcome.status, outcome.error_code, outcome.error_step_path) == ("failed", "INVALID_STEP_INPUT", "2")
    assert "limit is 1000" in outcome.error_message
