"""Real Chromium through real (local) proxies: forwarding, refusal, 403, 407, SOCKS5, timeouts,
and the rotation around a failing proxy — what a worker does, minus Celery.

Launch arguments are the pool's ordinary ones: no ``--proxy-bypass-list`` and no launch-level
``proxy``. Playwright (>= 1.18) adds ``<-loopback>`` to every context proxy's bypass list itself,
which is why 127.0.0.1 targets go through the proxy here (the tests prove it with hit counters).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pytest
import redis
from playwright.async_api import Browser, Playwright
from structlog.testing import capture_logs

from browserq.browsers.api import async_playwright
from browserq.proxies import (
    AUTH,
    BLOCKED,
    REFUSED,
    TIMEOUT,
    Proxy,
    ProxyConfig,
    ProxyManager,
    classify_error,
    classify_response,
    parse_proxy,
)
from tests.proxies.conftest import PASSWORD
from tests.proxies.servers import (
    AuthProxy,
    ClosingProxy,
    ForbiddenProxy,
    HangingProxy,
    HttpProxy,
    RefusingProxy,
    Socks5Proxy,
    TargetServer,
)

CHROMIUM = "/usr/bin/chromium" if os.path.exists("/usr/bin/chromium") else shutil.which("chromium")
LAUNCH_ARGS = [
    "--no-sandbox",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no system Chromium")


@dataclass
class Loaded:
    status: int | None = None
    body: str = ""
    error: str | None = None


class Chromium:
    """One Chromium for the module, driven from a private event loop (Playwright's async API)."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.playwright: Playwright = self.run(async_playwright().start())
        self.browser: Browser = self.run(
            self.playwright.chromium.launch(
                executable_path=CHROMIUM,
                args=LAUNCH_ARGS,
                handle_sigint=False,
                handle_sigterm=False,
                handle_sighup=False,
            )
        )

    def run(self, coro):  # type: ignore[no-untyped-def]
        return self.loop.run_until_complete(coro)

    def load(self, proxy: Proxy | dict | None, url: str, timeout_ms: float = 5000) -> Loaded:
        options = (
            proxy if isinstance(proxy, dict) else (proxy.playwright_options() if proxy else None)
        )

        async def go() -> Loaded:
            context = await self.browser.new_context(**({"proxy": options} if options else {}))
            try:
                page = await context.new_page()
                try:
                    response = await page.goto(url, timeout=timeout_ms)
                except Exception as exc:
                    return Loaded(error=str(exc))
                return Loaded(response.status if response else None, await page.content())
            finally:
                await context.close()

        return self.run(go())

    def close(self) -> None:
        self.run(self.browser.close())
        self.run(self.playwright.stop())
        self.loop.close()


@pytest.fixture(scope="module")
def chromium() -> Iterator[Chromium]:
    browser = Chromium()
    yield browser
    browser.close()


@dataclass
class Servers:
    target: TargetServer
    good: HttpProxy
    good2: HttpProxy
    forbidden: HttpProxy
    auth: HttpProxy
    refusing: RefusingProxy
    closing: ClosingProxy
    hanging: HangingProxy
    socks: Socks5Proxy

    def all(self) -> list:
        return list(vars(self).values())


@pytest.fixture(scope="module")
def module_servers() -> Iterator[Servers]:
    servers = Servers(
        TargetServer(),
        HttpProxy(name="good"),
        HttpProxy(name="good2"),
        ForbiddenProxy(),
        AuthProxy("alice", PASSWORD),
        RefusingProxy(),
        ClosingProxy(),
        HangingProxy(),
        Socks5Proxy(),
    )
    for server in servers.all():
        server.start()
    yield servers
    for server in servers.all():
        server.stop()


@pytest.fixture
def servers(module_servers: Servers) -> Servers:
    for server in module_servers.all():
        server.reset()
    return module_servers


class Clock:
    """Wall-clock time that a test can move forward (the machine may be too loaded for real
    sub-second cooldowns to be reliable around browser loads)."""

    def __init__(self) -> None:
        self.offset = 0.0

    def __call__(self) -> float:
        return time.time() + self.offset


@pytest.fixture
def make_manager(redis_client: redis.Redis, namespace: str) -> Callable[..., ProxyManager]:
    def make(
        proxies: list[Proxy],
        strategy: str = "round_robin",
        cooldown_s: float = 30,
        clock: Clock | None = None,
    ) -> ProxyManager:
        config = ProxyConfig(
            proxies=tuple(proxies), strategy=strategy, cooldown_s=cooldown_s, cooldown_max_s=600
        )
        return ProxyManager(
            config, client=redis_client, namespace=namespace, jitter=0.0, clock=clock or time.time
        )

    return make


def visit(
    chromium: Chromium, manager: ProxyManager, url: str, **choose: object
) -> tuple[Proxy, Loaded, str | None]:
    """What the runner does for one navigation: choose, load, classify and report."""
    proxy = manager.choose(**choose)  # type: ignore[arg-type]
    assert proxy is not None
    loaded = chromium.load(proxy, url)
    if loaded.error is not None:
        kind = manager.report_error(proxy, loaded.error)
    else:
        kind = manager.report_response(proxy, loaded.status, loaded.body)
        if kind is None:
            manager.report_success(proxy)
    return proxy, loaded, kind


# --- each proxy on its own ---------------------------------------------------------------------


def test_without_a_proxy_the_target_is_reached_directly(
    chromium: Chromium, servers: Servers
) -> None:
    loaded = chromium.load(None, servers.target.url("/"))
    assert loaded.status == 200 and servers.target.requests[-1]["via"] is None


def test_working_proxy_forwards_the_request(chromium: Chromium, servers: Servers) -> None:
    proxy = parse_proxy(servers.good.proxy_url(region="de"))
    loaded = chromium.load(proxy, servers.target.url("/page?x=1"))
    assert loaded.status == 200 and "hello from target" in loaded.body
    assert servers.good.forwarded == 1 and servers.good.hits >= 1
    assert servers.target.requests == [
        {"path": "/page?x=1", "via": "good", "proxy_authorization": None}
    ]
    assert classify_response(loaded.status, loaded.body) is None


def test_refusing_proxy_is_classified_refused(chromium: Chromium, servers: Servers) -> None:
    loaded = chromium.load(parse_proxy(servers.refusing.proxy_url()), servers.target.url("/"))
    assert loaded.error is not None and "ERR_PROXY_CONNECTION_FAILED" in loaded.error
    assert classify_error(loaded.error) == REFUSED and servers.target.hits == 0


def test_accept_and_close_proxy_is_classified_refused(chromium: Chromium, servers: Servers) -> None:
    loaded = chromium.load(parse_proxy(servers.closing.proxy_url()), servers.target.url("/"))
    assert loaded.error is not None and classify_error(loaded.error) == REFUSED
    assert servers.closing.hits >= 1 and servers.target.hits == 0


def test_403_proxy_is_classified_blocked(chromium: Chromium, servers: Servers) -> None:
    loaded = chromium.load(parse_proxy(servers.forbidden.proxy_url()), servers.target.url("/"))
    assert loaded.status == 403 and classify_response(loaded.status, loaded.body) == BLOCKED
    assert servers.forbidden.forbidden >= 1 and servers.target.hits == 0


def test_captcha_page_through_a_proxy_is_classified_blocked(
    chromium: Chromium, servers: Servers
) -> None:
    loaded = chromium.load(parse_proxy(servers.good.proxy_url()), servers.target.url("/captcha"))
    assert loaded.status == 200 and classify_response(loaded.status, loaded.body) == BLOCKED


def test_auth_proxy_with_and_without_credentials(
    chromium: Chromium, servers: Servers, make_manager: Callable[..., ProxyManager]
) -> None:
    with_creds = parse_proxy(servers.auth.proxy_url("alice", PASSWORD))
    wrong_creds = parse_proxy(servers.auth.proxy_url("alice", "not-" + PASSWORD))
    no_creds = parse_proxy(servers.auth.proxy_url())
    manager = make_manager([with_creds])
    with capture_logs() as logs:
        missing = chromium.load(no_creds, servers.target.url("/"))
        assert missing.error is not None and "ERR_INVALID_AUTH_CREDENTIALS" in missing.error
        assert manager.report_error(with_creds, missing.error) == AUTH
        wrong = chromium.load(wrong_creds, servers.target.url("/"))
        assert (
            wrong.status == 407
            and manager.report_response(with_creds, wrong.status, wrong.body) == AUTH
        )
        assert servers.auth.auth_challenges >= 2 and servers.target.hits == 0
        good = chromium.load(with_creds, servers.target.url("/"))
        assert good.status == 200 and "hello from target" in good.body
        manager.report_success(with_creds)
    assert servers.auth.authorized >= 1 and servers.target.hits == 1
    assert servers.target.requests[0]["proxy_authorization"] is None  # not forwarded to the site
    [stats] = manager.stats()
    assert stats.failures[AUTH] == 2 and stats.successes == 1
    logged = repr(logs)
    assert "alice:***@" in logged  # the failure was logged, with a masked label
    for text in (missing.error, logged, repr(stats), str(stats.to_dict()), repr(with_creds)):
        assert PASSWORD not in text


def test_socks5_proxy(chromium: Chromium, servers: Servers) -> None:
    loaded = chromium.load(parse_proxy(servers.socks.proxy_url()), servers.target.url("/"))
    assert loaded.status == 200 and "hello from target" in loaded.body
    assert servers.socks.tunnels == 1 and servers.target.hits == 1


def test_chromium_cannot_authenticate_to_socks5(chromium: Chromium, servers: Servers) -> None:
    """Why config rejects socks5://user:pass@ — Playwright refuses such a context outright."""
    options = {"server": servers.socks.server, "username": "bob", "password": PASSWORD}
    with pytest.raises(Exception, match="does not support socks5 proxy authentication") as info:
        chromium.run(chromium.browser.new_context(proxy=options))
    assert PASSWORD not in str(info.value)


def test_hanging_proxy_is_classified_timeout(chromium: Chromium, servers: Servers) -> None:
    loaded = chromium.load(
        parse_proxy(servers.hanging.proxy_url()), servers.target.url("/"), timeout_ms=800
    )
    assert loaded.error is not None and classify_error(loaded.error) == TIMEOUT
    assert servers.hanging.hits >= 1


# --- rotation around failures -------------------------------------------------------------------


def test_rotation_skips_a_cooling_proxy_and_takes_it_back(
    chromium: Chromium, servers: Servers, make_manager: Callable[..., ProxyManager]
) -> None:
    bad = parse_proxy(servers.closing.proxy_url())
    good = parse_proxy(servers.good.proxy_url())
    good2 = parse_proxy(servers.good2.proxy_url())
    clock = Clock()
    manager = make_manager([bad, good, good2], cooldown_s=30, clock=clock)
    proxy, _loaded, kind = visit(chromium, manager, servers.target.url("/"))
    assert proxy == bad and kind == REFUSED
    bad_hits = servers.closing.hits
    used = [visit(chromium, manager, servers.target.url("/")) for _ in range(3)]
    picked = [p for p, _, _ in used]
    assert bad not in picked and picked[0] != picked[1] and picked[0] == picked[2]  # alternating
    assert all(loaded.status == 200 and kind is None for _, loaded, kind in used)
    assert servers.closing.hits == bad_hits  # never contacted while cooling down
    assert servers.good.forwarded + servers.good2.forwarded == 3
    clock.offset += 31  # the 30 s cooldown is over
    back = []
    while bad not in back and len(back) < 3:
        back.append(visit(chromium, manager, servers.target.url("/"))[0])
    assert bad in back and servers.closing.hits > bad_hits  # offered again after its cooldown
    stats = {s.id: s for s in manager.stats()}
    assert stats[bad.id].failures[REFUSED] == 2 and stats[bad.id].consecutive_failures == 2
    assert stats[bad.id].cooling_down_until is not None  # second cooldown: twice as long
    assert stats[good.id].successes + stats[good2.id].successes == 3 + len(back) - 1


def test_retry_on_another_proxy_after_a_block(
    chromium: Chromium, servers: Servers, make_manager: Callable[..., ProxyManager]
) -> None:
    blocked = parse_proxy(servers.forbidden.proxy_url())
    good = parse_proxy(servers.auth.proxy_url("alice", PASSWORD))
    manager = make_manager([blocked, good], strategy="sticky_domain")
    url = servers.target.url("/")
    with capture_logs() as logs:
        first, loaded, kind = visit(chromium, manager, url, domain=url)
        assert first == blocked and loaded.status == 403 and kind == BLOCKED
        retry, loaded, kind = visit(chromium, manager, url, domain=url, exclude={first.id})
        assert retry == good and loaded.status == 200 and kind is None
        # The domain now sticks to the proxy that worked.
        again, loaded, _ = visit(chromium, manager, url, domain=url)
        assert again == good and loaded.status == 200
    assert servers.forbidden.hits >= 1 and servers.target.hits == 2
    stats = {s.id: s for s in manager.stats()}
    assert stats[blocked.id].failures[BLOCKED] == 1 and stats[good.id].successes == 2
    assert PASSWORD not in repr(logs)
