"""Proxies and identities through the real runtime: rotation, cooldown, retry on another proxy,
identities that keep their (encrypted) storage from one run to the next."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis
import sqlalchemy as sa

from browserq.execute.runtime import Runtime
from tests.conftest import make_settings, template
from tests.proxies.servers import HttpProxy, RefusingProxy
from tests.support.redis import REALISM_DB, redis_url

PROXY_REDIS = redis_url(REALISM_DB)  # this process's own Redis

VISIT = """
params:
  url: {type: url, required: true}
settings: {trace: off, run_retries: 3, step_retries: 0}
steps:
  - {action: navigate, url: "${url}"}
  - {action: get, what: title, into: title}
"""


def test_a_refusing_proxy_cools_down_and_the_run_retries_on_another(tmp_path, demo) -> None:
    redis.Redis.from_url(PROXY_REDIS).flushdb()
    with HttpProxy(name="good") as good, RefusingProxy() as bad:
        settings = make_settings(
            tmp_path, proxies=[good.proxy_url("user", "pa55word"), bad.proxy_url()],
            proxy_strategy="round_robin", proxy_redis_url=PROXY_REDIS,
            proxy_cooldown_s=60, run_retry_backoff_s=0.05,
        )
        with Runtime(settings) as runtime:
            outcomes = [runtime.run_loaded(template(VISIT), {"url": f"{demo.url}/quotes/"}) for _ in range(4)]
            assert [o.status for o in outcomes] == ["completed"] * 4
            assert good.forwarded + good.tunnels >= 4  # every page load went through the good one
            stats = {s.label: s for s in runtime.proxies.stats()}
            bad_stats = next(s for label, s in stats.items() if str(bad.port) in label)
            assert bad_stats.failures_total == 1 and bad_stats.cooling_down_until is not None
            retried = [o for o in outcomes
                       if "retrying" in [t.to_status for t in runtime.store.transitions.transitions(o.run_id)]]
            assert len(retried) == 1  # the one run that drew the bad proxy, retried on the good one
            codes = {s.error_code for s in runtime.store.steps.steps(retried[0].run_id) if s.error_code}
            assert codes == {"PROXY_FAILED"}
            everything = repr([runtime.store.steps.steps(o.run_id) for o in outcomes])
            assert "pa55word" not in everything and "pa55word" not in repr(runtime.proxies.stats())


@pytest.mark.parametrize("engine", ["chromium", "headless-shell"])
def test_a_proxy_wanting_credentials_it_was_not_given_is_blamed_on_either_engine(
    tmp_path, demo, engine: str
) -> None:
    """Chromium fails the load (ERR_INVALID_AUTH_CREDENTIALS); the headless shell shows the proxy's
    407 page, which navigate takes for what it is: either way the proxy is blamed and cooled down,
    not the site."""
    from browserq.proxies import AUTH, classify_error
    from tests.proxies.servers import AuthProxy

    redis.Redis.from_url(PROXY_REDIS).flushdb()
    with AuthProxy("alice", "secret") as proxy:
        settings = make_settings(tmp_path, browser=engine, proxies=[proxy.proxy_url()], proxy_redis_url=PROXY_REDIS,
                                 proxy_cooldown_s=60, run_retries=0, run_retry_backoff_s=0.05)
        with Runtime(settings) as runtime:
            outcome = runtime.run_loaded(template(VISIT), {"url": f"{demo.url}/quotes/"})
            stats = runtime.proxies.stats()
            failed = [s for s in runtime.store.steps.steps(outcome.run_id) if s.error_code]
    assert outcome.status == "failed", outcome
    assert proxy.auth_challenges >= 1 and proxy.authorized == 0
    assert failed and failed[-1].error_code in ("PROXY_FAILED", "NAVIGATION_FAILED"), failed
    assert classify_error(failed[-1].error_message or "") == AUTH, failed[-1].error_message
    assert len(stats) == 1 and stats[0].successes == 0 and stats[0].failures_total >= 1, stats
    assert stats[0].last_failure_kind == AUTH and stats[0].cooling_down_until is not None, stats


LOGIN = """
params:
  base_url: {type: url, required: true}
  password: {type: secret, required: true}
settings: {trace: off}
steps:
  - {action: navigate, url: "${base_url}/login"}
  - {action: fill, selector: "#username", value: demo}
  - {action: fill, selector: "#password", value: "${password}"}
  - {action: click, selector: "button[type=submit]"}
  - {action: assert, selector: "#welcome"}
"""

ACCOUNT = """
params:
  base_url: {type: url, required: true}
settings: {trace: off, run_retries: 0}
steps:
  - {action: navigate, url: "${base_url}/account"}
  - {action: get, what: url, into: landed}
"""


def test_an_identity_keeps_its_session_between_runs_encrypted_at_rest(pg_runtime: Runtime, demo, pg_url) -> None:
    params = {"base_url": demo.url}
    assert pg_runtime.run_loaded(template(LOGIN), {**params, "password": "s3cret-pass"},
                                 identity="alice").status == "completed"
    alice = pg_runtime.run_loaded(template(ACCOUNT), params, identity="alice")
    bob = pg_runtime.run_loaded(template(ACCOUNT), params, identity="bob")
    anonymous = pg_runtime.run_loaded(template(ACCOUNT), params)
    assert alice.outputs["landed"].endswith("/account")  # logged in from the stored session
    assert bob.outputs["landed"].endswith("/login") and anonymous.outputs["landed"].endswith("/login")
    stored = pg_runtime.store.identities.get_identity("alice")
    assert stored.storage_encrypted and stored.storage_saved_at is not None
    assert stored.uses == 2 and not stored.leased()  # two runs, and released after each
    engine = sa.create_engine(pg_url)
    with engine.connect() as conn:
        row = conn.execute(sa.text("select storage_encrypted from identities where name = 'alice'")).scalar_one()
    engine.dispose()
    assert "session" not in row and "cookies" not in row  # ciphertext, not storage JSON


PROBE = """
settings: {allow_eval: true, trace: off}
steps:
  - {action: navigate, url: "%s/storage"}
  - action: eval
    expression: >-
      (async () => {
        const worker = new Worker(URL.createObjectURL(new Blob(
          ["postMessage([navigator.userAgent, navigator.platform, navigator.languages.join(',')])"])));
        const inWorker = await new Promise((ok) => { worker.onmessage = (e) => ok(e.data); });
        const brands = (navigator.userAgentData?.brands || []).map((b) => b.brand);
        return {ua: navigator.userAgent, webdriver: navigator.webdriver, brands,
                platform: navigator.platform, languages: navigator.languages.join(','),
                screen: [screen.width, screen.height], viewport: [innerWidth, innerHeight],
                worker: inWorker};
      })()
    into: seen
"""


@pytest.fixture(scope="module")
def chromium_runtime(tmp_path_factory: pytest.TempPathFactory, pg_url: str) -> Iterator[Runtime]:
    """A runtime on the full Chromium whatever the suite's engine: what a visitor looks like is
    the full browser's (the headless shell's tells are docs/browsers.md's, and tests/stealth's)."""
    settings = make_settings(tmp_path_factory.mktemp("chromium"), database_url=pg_url, browser="chromium")
    runtime = Runtime(settings).start()
    yield runtime
    runtime.stop()


def test_every_run_presents_a_coherent_non_headless_visitor(chromium_runtime: Runtime, demo) -> None:
    seen = chromium_runtime.run_loaded(template(PROBE % demo.url)).outputs["seen"]
    assert "Headless" not in seen["ua"] and seen["webdriver"] is False
    assert not any("Headless" in b for b in seen["brands"])
    assert seen["worker"][0] == seen["ua"]  # the same browser in a Web Worker
    assert seen["worker"][1] == seen["platform"] and seen["worker"][2] == seen["languages"]
    assert seen["viewport"] != [1280, 720] and seen["screen"][0] >= seen["viewport"][0]


def test_a_named_identity_is_the_same_visitor_every_time(pg_runtime: Runtime, demo) -> None:
    first = pg_runtime.run_loaded(template(PROBE % demo.url), identity="carol").outputs["seen"]
    again = pg_runtime.run_loaded(template(PROBE % demo.url), identity="carol").outputs["seen"]
    assert (first["ua"], first["screen"], first["viewport"]) == (again["ua"], again["screen"], again["viewport"])


def test_human_input_clicks_and_types(any_runtime: Runtime, demo) -> None:
    loaded = template(
        """
        settings: {human_input: true, allow_eval: true, trace: off}
        steps:
          - {action: navigate, url: "%s/widgets"}
          - {action: wait, selector: "#delayed"}  # the late button shifts the layout: let it land
          - action: eval
            expression: "window.__moves = 0; document.addEventListener('mousemove', () => window.__moves++); 1"
          - {action: click, selector: "#inc"}
          - {action: type, selector: "#keys", text: "hello"}
          - {action: get, what: text, selector: "#counter", into: counter}
          - {action: get, what: value, selector: "#keys", into: typed}
          - {action: eval, expression: "window.__moves", into: moves}
        """
        % demo.url
    )
    outcome = any_runtime.run_loaded(loaded)
    assert outcome.status == "completed", outcome
    assert outcome.outputs["counter"] == "1" and outcome.outputs["typed"] == "hello"
    assert outcome.outputs["moves"] >= 5  # a path, not a teleport


def test_an_identity_keeps_its_proxy_while_it_is_healthy(tmp_path, demo) -> None:
    redis.Redis.from_url(PROXY_REDIS).flushdb()
    with HttpProxy(name="a") as a, HttpProxy(name="b") as b:
        settings = make_settings(tmp_path, proxies=[a.proxy_url(), b.proxy_url()],
                                 proxy_strategy="round_robin", proxy_redis_url=PROXY_REDIS)
        with Runtime(settings) as runtime:
            for _ in range(4):
                outcome = runtime.run_loaded(template(VISIT), {"url": f"{demo.url}/quotes/"}, identity="dora")
                assert outcome.status == "completed"
            used = [p for p in (a, b) if p.hits]
            assert len(used) == 1  # round robin for everyone else, sticky for dora
            assert runtime.store.identities.get_identity("dora").proxy_id is not None
