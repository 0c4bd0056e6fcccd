"""allowed_domains is prevention: no request for a foreign host leaves the browser.

Two (three) real servers on loopback: the allowed site on 127.0.0.1, a foreign one on 127.0.0.2
that counts every request it receives, a CDN on 127.0.0.3. Chromium resolves the test host names
to them with ``--host-resolver-rules`` (see ``domain_sites.py``). For every way a page can leave —
redirect hops, ``location =``, links, popups, iframes, lookalike hosts, and in strict mode images,
fetch, XHR, beacons and WebSockets — the foreign count must stay 0 and the step fail
``DOMAIN_DENIED`` with the blocked URL on record.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterator

import pytest

from browserq.execute.runtime import Runtime
from browserq.guards import foreign_url_regex, url_host_allowed
from tests.browsers.domain_sites import DomainSites
from tests.conftest import make_settings, template
from tests.support.cli_zygote import browserq_command
from tests.support.workers import browserq_env

ALLOWED = ["allowed.test", "partner.test"]


@pytest.fixture(scope="module")
def sites() -> Iterator[DomainSites]:
    with DomainSites() as servers:
        yield servers


@pytest.fixture(scope="module")
def runtime(sites: DomainSites, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runtime]:
    settings = make_settings(tmp_path_factory.mktemp("domains"), chromium_args=[sites.resolver_rules()])
    rt = Runtime(settings).start()
    yield rt
    rt.stop()


@pytest.fixture
def web(sites: DomainSites) -> DomainSites:
    sites.reset()
    return sites


def _run(runtime: Runtime, steps: str, *, network: str = "open", allowed: list[str] | None = None, extra: str = ""):
    domains = ", ".join(allowed if allowed is not None else ALLOWED)
    mode = f", network: {network}" if network != "open" else ""  # the default is open
    head = f'settings: {{allowed_domains: [{domains}]{mode}, step_retries: 0, trace: "off"{extra}}}\n'
    return runtime.run_loaded(template(head + "steps:\n" + steps))


def _blocked_evidence(runtime: Runtime, run_id: str) -> dict:
    artifacts = [a for a in runtime.store.steps.artifacts(run_id) if a.kind == "blocked_requests"]
    assert artifacts, "the run has no blocked_requests evidence"
    return json.loads((runtime.settings.artifacts_dir / artifacts[0].path).read_text())


def _assert_denied(runtime: Runtime, web: DomainSites, outcome, blocked_url_part: str) -> None:
    assert web.foreign.requests == []  # not one request reached the foreign server
    assert (outcome.status, outcome.error_code) == ("failed", "DOMAIN_DENIED"), outcome
    assert blocked_url_part in (outcome.error_message or "")
    steps = runtime.store.steps.steps(outcome.run_id)
    failed = [s for s in steps if s.status == "failed"]
    assert failed and failed[-1].error_code == "DOMAIN_DENIED"
    assert blocked_url_part in (failed[-1].error_message or "")  # on the step record: `browserq show`
    assert any(blocked_url_part in u for u in _blocked_evidence(runtime, outcome.run_id)["documents_blocked"])


def _navigate(url: str) -> str:
    return f'  - {{action: navigate, url: "{url}"}}\n'


def _then_wait() -> str:
    return '  - {action: wait, ms: 400}\n  - {action: get, what: title, into: title}\n'


def _assert_click_denied(runtime: Runtime, web: DomainSites, page: str, to: str, target: str) -> None:
    """Open ``page?to=<to>`` on the allowed host and click its link ``#l``: ``target`` is denied."""
    steps = _navigate(web.url("allowed.test", f"{page}?to={to}"))
    steps += '  - {action: click, selector: "#l"}\n' + _then_wait()
    _assert_denied(runtime, web, _run(runtime, steps), target)


# --- documents -------------------------------------------------------------------------------------
def test_302_redirect_to_a_foreign_host_is_never_followed(runtime, web) -> None:
    target = web.url("foreign.test", "/redirected")
    outcome = _run(runtime, _navigate(web.url("allowed.test", f"/r302?to={target}")))
    _assert_denied(runtime, web, outcome, target)


def test_a_chain_that_leaves_on_its_second_hop_is_stopped_there(runtime, web) -> None:
    target = web.url("foreign.test", "/chain-end")
    outcome = _run(runtime, _navigate(web.url("allowed.test", f"/hop?to={target}")))
    _assert_denied(runtime, web, outcome, target)
    assert [r.split()[1].split("?")[0] for r in web.allowed.requests if "favicon" not in r] == ["/hop", "/r302"]


def test_js_location_assignment(runtime, web) -> None:
    target = web.url("foreign.test", "/js-target")
    outcome = _run(runtime, _navigate(web.url("allowed.test", f"/js?to={target}")) + _then_wait())
    _assert_denied(runtime, web, outcome, target)


def test_clicked_link(runtime, web) -> None:
    target = web.url("foreign.test", "/clicked")
    _assert_click_denied(runtime, web, "/link", target, target)


def test_target_blank_link_popup(runtime, web) -> None:
    target = web.url("foreign.test", "/blank-popup")
    _assert_click_denied(runtime, web, "/blank", target, target)


def test_window_open_popup(runtime, web) -> None:
    target = web.url("foreign.test", "/opened")
    _assert_click_denied(runtime, web, "/open", target, target)


def test_popup_whose_allowed_first_url_redirects_away(runtime, web) -> None:
    target = web.url("foreign.test", "/popup-hop")
    first = web.url("allowed.test", f"/r302?to={target}")
    _assert_click_denied(runtime, web, "/open", first, target)


def test_cross_site_iframe(runtime, web) -> None:
    target = web.url("foreign.test", "/framed")
    outcome = _run(runtime, _navigate(web.url("allowed.test", f"/iframe?to={target}")) + _then_wait())
    _assert_denied(runtime, web, outcome, target)


def test_same_site_iframe_on_a_host_not_allowed(runtime, web) -> None:
    # evil.allowed.test is same-site with www.allowed.test (an in-process frame), but not allowed.
    target = web.url("evil.allowed.test", "/framed")
    outcome = _run(
        runtime,
        _navigate(web.url("www.allowed.test", f"/iframe?to={target}")) + _then_wait(),
        allowed=["www.allowed.test"],
    )
    _assert_denied(runtime, web, outcome, target)


def test_navigation_inside_an_out_of_process_iframe(runtime, web) -> None:
    # partner.test is allowed and cross-site: its frame is its own process (target); from there
    # the frame sends itself to a foreign host.
    target = web.url("foreign.test", "/from-oopif")
    inner = web.url("partner.test", f"/frame-js?to={target}")
    outcome = _run(runtime, _navigate(web.url("allowed.test", f"/iframe?to={inner}")) + _then_wait())
    _assert_denied(runtime, web, outcome, target)
    assert any("/frame-js" in r for r in web.allowed.requests)  # the allowed frame did load


@pytest.mark.parametrize("host", ["allowed.test.evil", "evil-allowed.test"])
def test_lookalike_hosts_via_redirect_and_link(runtime, web, host: str) -> None:
    target = web.url(host, "/lookalike")
    outcome = _run(runtime, _navigate(web.url("allowed.test", f"/r302?to={target}")))
    _assert_denied(runtime, web, outcome, target)
    steps = _navigate(web.url("allowed.test", f"/link?to={target}"))
    steps += '  - {action: click, selector: "#l"}\n' + _then_wait()
    _assert_denied(runtime, web, _run(runtime, steps), target)


def test_lookalike_host_from_a_param_in_a_navigate_step(runtime, web) -> None:
    loaded = template(
        """
        params: {target: {type: string, required: true}}
        settings: {allowed_domains: [allowed.test], step_retries: 0}
        steps:
          - {action: navigate, url: "${target}"}
        """
    )
    for host in ("allowed.test.evil", "evil-allowed.test"):
        outcome = runtime.run_loaded(loaded, {"target": web.url(host, "/direct")})
        assert outcome.error_code == "DOMAIN_DENIED"
    assert web.foreign.requests == []


def test_extract_never_returns_a_foreign_iframes_content(runtime, web) -> None:
    target = web.url("foreign.test", "/framed-content")
    steps = '  - {action: navigate, url: "%s", continue_on_error: true}\n' % web.url(
        "allowed.test", f"/iframe?to={target}"
    )
    steps += '  - {action: extract, selector: "iframe#f >>> body", fields: {text: "p"}, into: rows,'
    steps += " allow_empty: true, continue_on_error: true}\n"
    steps += '  - {action: get, what: html, selector: "body", into: page_html}\n'
    outcome = _run(runtime, steps)
    assert web.foreign.requests == []
    assert "FOREIGN CONTENT" not in json.dumps(outcome.outputs)
    assert "host page" in outcome.outputs["page_html"]


# --- what still works ------------------------------------------------------------------------------
def test_default_mode_lets_subresources_reach_other_hosts(runtime, web) -> None:
    image = web.url("cdn.test", "/pixel.png")
    steps = _navigate(web.url("allowed.test", f"/image?to={image}"))
    steps += "  - {action: eval, expression: \"document.getElementById('img').naturalWidth\", into: width}\n"
    loaded = template(
        'settings: {allowed_domains: [allowed.test], allow_eval: true, trace: "off"}\nsteps:\n' + steps
    )
    outcome = runtime.run_loaded(loaded)
    assert outcome.status == "completed", outcome
    assert outcome.outputs["width"] == 1  # the CDN image loaded
    assert any("/pixel.png" in r for r in web.cdn.requests)


def test_allowed_redirects_subdomains_and_unguarded_runs_are_untouched(runtime, web) -> None:
    target = web.url("www.allowed.test", "/landed")
    steps = _navigate(web.url("allowed.test", f"/hop?to={target}"))
    steps += "  - {action: get, what: url, into: url}\n"
    outcome = _run(runtime, steps)
    assert outcome.status == "completed", outcome
    assert outcome.outputs["url"] == target
    # A template without allowed_domains may go anywhere (and is not slowed by the guard).
    loaded = template('steps:\n  - {action: navigate, url: "%s"}\n' % web.url("foreign.test", "/anywhere"))
    assert runtime.run_loaded(loaded).status == "completed"
    assert len(web.foreign.requests) >= 1


# --- strict mode -----------------------------------------------------------------------------------
def test_strict_mode_blocks_every_subresource_kind_and_records_them(runtime, web) -> None:
    origin = web.url("foreign.test", "").rstrip("/")
    steps = _navigate(web.url("allowed.test", f"/strict?to={origin}"))
    steps += '  - {action: wait, selector: "#done"}\n'
    steps += '  - {action: get, what: text, selector: "#done", into: results}\n'
    outcome = _run(runtime, steps, network="strict")
    assert web.foreign.requests == []  # image, fetch, XHR, beacon, WebSocket: none arrived
    assert outcome.status == "completed", outcome  # blocked subresources do not fail the step
    results = json.loads(outcome.outputs["results"])
    assert results["image"] == "error" and results["fetch"] == "error" and results["xhr"] == "error"
    assert results["ws"] in ("error", "closed")
    evidence = _blocked_evidence(runtime, outcome.run_id)
    kinds = evidence["subresources_by_type"]
    # Chromium's resource types: fetch() and XMLHttpRequest are both "xhr", a beacon is "ping".
    assert kinds == {"image": 1, "xhr": 2, "ping": 1, "websocket": 1}
    assert evidence["subresources_blocked"] == 5
    assert any(url.endswith("/pixel.png") for url in evidence["subresource_sample"])


def test_strict_mode_judges_every_redirect_hop_of_a_subresource(runtime, web) -> None:
    # The image's URL is on the allowed host and answers 302 to the foreign one: a Playwright
    # route is never called for that second hop; the browser-level guard is.
    target = web.url("foreign.test", "/pixel.png")
    image = web.url("allowed.test", f"/r302?to={target}")
    steps = _navigate(web.url("allowed.test", f"/image?to={image}")) + _then_wait()
    outcome = _run(runtime, steps, network="strict")
    assert web.foreign.requests == []
    assert outcome.status == "completed", outcome
    evidence = _blocked_evidence(runtime, outcome.run_id)
    assert evidence["subresources_by_type"] == {"image": 1}
    assert evidence["subresource_sample"] == [target]


def test_strict_mode_covers_requests_from_a_dedicated_worker(runtime, web) -> None:
    target = web.url("foreign.test", "/from-worker")
    steps = _navigate(web.url("allowed.test", f"/worker?to={target}"))
    steps += '  - {action: wait, selector: "#done"}\n  - {action: get, what: text, selector: "#done", into: r}\n'
    outcome = _run(runtime, steps, network="strict")
    assert web.foreign.requests == []
    assert outcome.status == "completed", outcome
    assert outcome.outputs["r"] == "error"


def test_strict_mode_still_blocks_documents_with_domain_denied(runtime, web) -> None:
    target = web.url("foreign.test", "/strict-doc")
    outcome = _run(runtime, _navigate(web.url("allowed.test", f"/r302?to={target}")), network="strict")
    _assert_denied(runtime, web, outcome, target)
    steps = _navigate(web.url("allowed.test", f"/link?to={target}"))
    steps += '  - {action: click, selector: "#l"}\n' + _then_wait()
    _assert_denied(runtime, web, _run(runtime, steps, network="strict"), target)


def test_strict_mode_needs_allowed_domains() -> None:
    from browserq.errors import TemplateInvalid

    with pytest.raises(TemplateInvalid, match=r"network: strict .* allowed_domains is empty"):
        template('settings: {network: strict}\nsteps:\n  - {action: navigate, url: "http://a.test/"}\n')


# --- the rule --------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "url",
    [
        "http://allowed.test/", "https://allowed.test:8443/x?y#z", "http://a.b.allowed.test/",
        "http://ALLOWED.test/", "http://allowed.test./", "ws://allowed.test/ws", "http://partner.test",
        "http://allowed.test.evil/", "http://evil-allowed.test/", "http://allowed.testx/",
        "http://xallowed.test/", "http://allowed.test@evil.test/", "http://evil.test/allowed.test",
        "http://evil.test/?h=allowed.test", "http://127.0.0.2:81/", "wss://foreign.test/s",
        "http://[::1]/", "http://allowed-test/",
    ],
)
def test_the_strict_regex_agrees_with_url_host_allowed(url: str) -> None:
    from browserq.guards import url_scheme_and_host

    _, host = url_scheme_and_host(url)
    foreign = not url_host_allowed(host, ALLOWED)
    assert bool(foreign_url_regex(ALLOWED).search(url)) is foreign


def test_the_regex_is_read_the_same_way_by_the_browser(runtime) -> None:
    """Playwright's driver compiles the pattern as a JavaScript RegExp: same answers there."""
    pattern = foreign_url_regex(ALLOWED)
    urls = ["http://allowed.test/", "http://allowed.test.evil/", "http://x.partner.test:1/", "http://evil-allowed.test/"]

    async def in_browser() -> list[bool]:
        context = await runtime.pool.new_context()
        try:
            page = context.pages[0] if context.pages else await context.new_page()
            return await page.evaluate(
                "([src, flags, urls]) => urls.map(u => new RegExp(src, flags).test(u))",
                [pattern.pattern, "i", urls],
            )
        finally:
            await runtime.pool.close_context(context)

    assert runtime.loop.run(in_browser(), timeout=30) == [bool(pattern.search(u)) for u in urls]


def test_regex_alternatives_are_escaped() -> None:
    pattern = foreign_url_regex(["a.b"])
    assert pattern.search("http://axb/")  # the dot is literal
    assert not pattern.search("http://a.b/")
    assert re.compile(pattern.pattern)  # compiles


# --- composition: Playwright's own interception, proxies, recycled browsers ----------------------------
def test_guard_composes_with_block_resources(runtime, web) -> None:
    """block_resources puts a Playwright route on every request: the guard still holds."""
    target = web.url("foreign.test", "/with-routes")
    outcome = _run(runtime, _navigate(web.url("allowed.test", f"/r302?to={target}")),
                   extra=", block_resources: [image]")
    _assert_denied(runtime, web, outcome, target)


@pytest.mark.slow
def test_guard_holds_through_an_authenticating_proxy_and_a_recycled_browser(tmp_path, web) -> None:
    """Through a proxy that demands credentials (Playwright answers the 407 with its own Fetch
    interception), in a pre-warmed spare and again in the browser that replaced a recycled one."""
    from browserq.browsers import BrowserPool, EventLoopThread
    from tests.proxies.servers import AuthProxy

    loop = EventLoopThread().start()
    pool = BrowserPool(make_settings(tmp_path, context_prewarm=1, browser_max_contexts=2))
    proxy = AuthProxy("user", "pa55word").start()
    try:
        loop.run(pool.start(), timeout=60)
        start = f"http://127.0.0.1:{web.allowed.port}"
        foreign = f"http://localhost:{web.foreign.port}/via-proxy"  # the proxy would forward it

        async def attempt(options: dict) -> tuple[str | None, list[str]]:
            context = await pool.new_context(**options)
            try:
                page = context.pages[0] if context.pages else await context.new_page()
                blocked = await pool.domain_guard(context).protect(context, page, ["127.0.0.1"])
                error = None
                try:
                    await page.goto(f"{start}/r302?to={foreign}", timeout=15000)
                except Exception as exc:
                    error = str(exc).splitlines()[0]
                second = await context.new_page()
                await second.goto(f"{start}/ok", timeout=15000)  # allowed pages still load
                return error, list(blocked.documents)
            finally:
                await pool.close_context(context)

        via_proxy = {"proxy": {"server": proxy.server, "username": "user", "password": "pa55word"}}
        for options in (via_proxy, {}, {}, via_proxy):  # proxy, spare, spare after recycle, proxy
            error, documents = loop.run(attempt(options), timeout=60)
            assert error is not None and "ERR_BLOCKED_BY_CLIENT" in error
            assert documents == [foreign]
        assert pool.recycles >= 1
        assert proxy.requests  # the runs did go through the proxy …
        assert not [t for _, t in proxy.requests if t.startswith(("http://localhost", "localhost"))]  # … not this
        assert proxy.authorized >= 2  # the allowed pages went through it, credentials answered
        assert web.foreign.requests == []
    finally:
        loop.run(pool.stop(), timeout=60)
        loop.stop()
        proxy.stop()


def test_each_context_is_judged_by_its_own_rule(runtime, web) -> None:
    """Contexts of one browser side by side: a guarded one, one guarded by other hosts and an
    unguarded one load the same page with a foreign iframe. Only the unguarded one's request, and
    the one its rule allows, reach the foreign server; nothing is attributed to the wrong run."""
    pool = runtime.pool

    async def scenario() -> list[list[str]]:
        contexts = [await pool.new_context() for _ in range(3)]
        try:
            pages = [c.pages[0] if c.pages else await c.new_page() for c in contexts]
            rules = [["allowed.test"], ["allowed.test", "foreign.test"], []]
            logs = [await pool.domain_guard(c).protect(c, p, r) for c, p, r in zip(contexts, pages, rules, strict=True)]
            urls = [web.url("allowed.test", f"/iframe?to={web.url('foreign.test', f'/ctx{i}')}") for i in range(3)]
            await asyncio.gather(*(p.goto(u) for p, u in zip(pages, urls, strict=True)))
            await asyncio.gather(*(p.wait_for_timeout(300) for p in pages))
            return [list(log.documents) for log in logs]
        finally:
            for context in contexts:
                await pool.close_context(context)

    documents = runtime.loop.run(scenario(), timeout=60)
    assert documents == [[web.url("foreign.test", "/ctx0")], [], []]
    assert sorted(r.split()[1] for r in web.foreign.requests if "favicon" not in r) == ["/ctx1", "/ctx2"]


def test_browserq_show_prints_the_blocked_url(runtime, web) -> None:
    from tests.conftest import REPO

    target = web.url("foreign.test", "/shown")
    outcome = _run(runtime, _navigate(web.url("allowed.test", f"/r302?to={target}")))
    env = browserq_env()
    env.update({"BROWSERQ_DATABASE_URL": runtime.settings.database_url,
                "BROWSERQ_ARTIFACTS_DIR": str(runtime.settings.artifacts_dir), "PYTHONPATH": str(REPO)})
    shown = browserq_command(["show", outcome.run_id, "--json"], env=env, timeout=120)
    assert shown.returncode == 0, shown.stderr
    data = json.loads(shown.stdout)
    step = [s for s in data["steps"] if s["status"] == "failed"][-1]
    assert step["error_code"] == "DOMAIN_DENIED" and target in step["error_message"]
    assert "blocked_requests" in [a["kind"] for a in data["artifacts"]]
    assert web.foreign.requests == []
