"""Making a browser context match a :class:`~browserq.stealth.fingerprint.Fingerprint`.

Three layers, each doing only what the one before cannot (measured on Chromium 156 + Playwright
1.65; README.md in this package has the table):

1. **Launch flags** (:func:`launch_args`, :func:`ignore_default_args`), per browser process:
   ``--disable-blink-features=AutomationControlled`` makes ``navigator.webdriver`` false natively
   (the prototype getter every browser has); ``--user-agent`` removes ``HeadlessChrome`` where no
   per-context override reaches (service and shared workers, cross-site iframes, their
   requests); ``--accept-lang`` sets the languages every surface shares; scrollbars come back
   (Playwright's ``--hide-scrollbars`` is dropped).
2. **Context options** (:func:`context_options`): timezone, viewport, screen, scale factor.
   Deliberately neither ``user_agent`` nor ``locale``: Playwright would then send its own
   ``userAgentMetadata`` (no brands in workers, Windows ``platformVersion`` "10.0", no
   ``navigator.platform``) and its own one-language ``acceptLanguage`` (sent unexpanded, unlike
   Chrome) to every page, frame and worker session.
3. **Per page** (:func:`apply`): CDP ``Emulation.setUserAgentOverride`` with the full
   client-hint metadata and ``navigator.platform`` (same-process iframes and dedicated workers
   inherit it), ``setLocaleOverride`` / ``setHardwareConcurrencyOverride`` where the browser's
   own values differ, and one init script (``patches.js``) for what no CDP command covers:
   WebGL vendor/renderer, the screen work area, the outer window geometry and ``deviceMemory``
   when it differs — replaced functions keep native ``toString``, descriptors and error stacks,
   in every frame.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import weakref
from importlib import resources
from typing import Any

from playwright.async_api import Browser, BrowserContext, CDPSession, Page

from browserq.stealth.fingerprint import Fingerprint
from browserq.stealth.host import CH_PLATFORM, HostInfo, host_platform, user_agent_for
from browserq.stealth.workers import WorkerScripts, prime_page_targets, worker_scripts

#: Always-safe launch flags (version-independent).
BASE_LAUNCH_ARGS: tuple[str, ...] = ("--disable-blink-features=AutomationControlled",)


def launch_args(
    fp: Fingerprint | None = None, *, chrome_version: str | None = None, headless: bool = True
) -> list[str]:
    """Chromium flags for a browser whose contexts will carry stealth identities.

    With ``fp`` (the worker's "pool identity"): ``--user-agent`` (its UA string, without
    ``HeadlessChrome``), ``--lang``/``--accept-lang`` (its locale) and ``--window-size``. Contexts
    whose fingerprint shares the platform and locale are then coherent even where no per-context
    override reaches (service/shared workers, cross-site iframes). With only ``chrome_version``
    (see :func:`~browserq.stealth.host.chrome_version_of`), the user agent is the host
    platform's. Without either, only the version-independent flags. ``headless=False`` (a real
    or virtual display): no ``--user-agent`` for the host platform — headful Chrome's own says
    no ``HeadlessChrome`` and keeps its client hints, which the flag would blank.
    """
    args = list(BASE_LAUNCH_ARGS)
    foreign = fp is not None and fp.platform != host_platform()
    if fp is not None:
        if headless or foreign:
            args.append(f"--user-agent={fp.user_agent}")
        args += [
            f"--lang={fp.locale}",
            f"--accept-lang={fp.locale}",
            f"--window-size={fp.outer[0]},{fp.outer[1]}",
        ]
    elif chrome_version and headless:
        major = int(chrome_version.split(".")[0])
        args += [
            f"--user-agent={user_agent_for(host_platform(), major)}",
            "--window-size=1920,1080",
        ]
    else:
        args.append("--window-size=1920,1080")
    return args


def ignore_default_args() -> list[str]:
    """Playwright defaults to drop at launch (``ignore_default_args=``).

    ``--hide-scrollbars`` makes every scrollbar 0 px wide, which no desktop Chrome on Windows or
    Linux does (``innerWidth - clientWidth`` is 15 there). Screenshots then show scrollbars.
    """
    return ["--hide-scrollbars"]


def context_options(fp: Fingerprint) -> dict[str, Any]:
    """Keyword arguments for ``browser.new_context`` that describe ``fp``.

    No ``locale`` and no ``user_agent`` on purpose: Playwright would push its own
    ``acceptLanguage`` (one language, sent as-is — Chrome itself sends ``de-DE,de;q=0.9``) and
    its own client-hint metadata onto every page, frame and worker session. :func:`apply` sets
    both through CDP, and only where the browser's defaults differ from ``fp``.
    """
    return {
        "timezone_id": fp.timezone,
        "viewport": {"width": fp.viewport[0], "height": fp.viewport[1]},
        "screen": {"width": fp.screen[0], "height": fp.screen[1]},
        "device_scale_factor": fp.device_scale_factor,
        "is_mobile": False,
        "has_touch": False,
    }


def user_agent_override(fp: Fingerprint, host: HostInfo | None = None) -> dict[str, Any]:
    """Parameters of CDP ``Emulation.setUserAgentOverride`` for ``fp``.

    ``acceptLanguage`` is left empty (no override) when the browser's own languages already are
    ``fp``'s: the browser then builds ``Accept-Language`` itself, base-language expansion included.
    """
    native_languages = host is not None and tuple(host.languages) == tuple(fp.languages)
    return {
        "userAgent": fp.user_agent,
        "acceptLanguage": "" if native_languages else ",".join(fp.languages),
        "platform": fp.navigator_platform,
        "userAgentMetadata": fp.user_agent_metadata(),
    }


def init_script(fp: Fingerprint, *, host: HostInfo | None = None, nonce: str | None = None) -> str:
    """The init script for ``fp`` (``patches.js`` with its configuration filled in)."""
    config: dict[str, Any] = {
        "nonce": nonce or f"bq{secrets.token_hex(12)}",
        "webgl": {"vendor": fp.webgl_vendor, "renderer": fp.webgl_renderer},
        "deviceMemory": fp.device_memory,
        "screen": {
            "availLeft": fp.avail[0],
            "availTop": fp.avail[1],
            "availWidth": fp.avail[2],
            "availHeight": fp.avail[3],
        },
        "window": {
            "outerWidth": fp.outer[0],
            "outerHeight": fp.outer[1],
            "screenX": fp.window_position[0],
            "screenY": fp.window_position[1],
        },
    }
    if (
        host is not None
        and host.webgl_renderer == fp.webgl_renderer
        and host.webgl_vendor == fp.webgl_vendor
    ):
        config["webgl"] = None
    # Shared and service workers see no CDP override: their platform and cores (patched only
    # where the native value differs, i.e. for an identity that is not the host's).
    config["workerNavigator"] = {
        "platform": fp.navigator_platform,
        "hardwareConcurrency": fp.hardware_concurrency,
    }
    if host is not None and host.blank_hints:
        metadata = fp.user_agent_metadata()
        config["hints"] = {
            key: metadata[key]
            for key in ("architecture", "bitness", "platformVersion", "fullVersionList", "model")
        } | {"uaFullVersion": fp.chrome_version, "formFactors": metadata["formFactors"]}
    source = resources.files("browserq.stealth").joinpath("patches.js").read_text(encoding="utf-8")
    return source.replace("__BROWSERQ_STEALTH_CONFIG__", json.dumps(config))


# --- applying ------------------------------------------------------------------------------------
class _ContextState:
    def __init__(self, fp: Fingerprint, host: HostInfo | None, script: str) -> None:
        self.fp = fp
        self.host = host
        self.script = script  # the init script, run in workers too (stealth/workers.py)
        self.worker_scripts: WorkerScripts | None = None
        self.registered = False  # the context's script is known to the worker-script watch
        self.ready: weakref.WeakKeyDictionary[Page, asyncio.Future[None]] = (
            weakref.WeakKeyDictionary()
        )


_STATES: weakref.WeakKeyDictionary[BrowserContext, _ContextState] = weakref.WeakKeyDictionary()


async def apply(context: BrowserContext, fp: Fingerprint, *, host: HostInfo | None = None) -> None:
    """Make ``context`` (created with :func:`context_options`) present ``fp`` on every page.

    Installs the init script for every frame of every page, and the per-page CDP overrides on
    existing pages and on every page opened later (``context.on("page")``). A page's overrides
    are sent asynchronously after it opens; open pages with :func:`new_page` (or ``await
    ready(page)``) so that nothing loads before they are in place. Calling it twice on a context
    raises: an identity is chosen once per context.
    """
    if context in _STATES:
        raise RuntimeError("stealth.apply() was already called on this context")
    state = _ContextState(fp, host, init_script(fp, host=host))
    _STATES[context] = state
    await context.add_init_script(script=state.script)
    if context.browser is not None:
        state.worker_scripts = await worker_scripts(context.browser)
    context.on("page", lambda page: _track(state, page))
    for page in context.pages:
        _track(state, page)
    await asyncio.gather(*(ready(page) for page in context.pages))


async def new_page(context: BrowserContext) -> Page:
    """``context.new_page()``, returned only once the page's identity overrides are in place."""
    page = await context.new_page()
    await ready(page)
    return page


async def ready(page: Page) -> None:
    """Wait until ``page``'s per-page overrides are sent (no-op for pages without stealth)."""
    state = _STATES.get(page.context)
    if state is None:
        return
    future = state.ready.get(page) or _track(state, page)
    await asyncio.shield(future)


def _track(state: _ContextState, page: Page) -> asyncio.Future[None]:
    existing = state.ready.get(page)
    if existing is not None:
        return existing
    future = asyncio.ensure_future(_setup_page(page, state))
    state.ready[page] = future
    # A page closed before setup finished is not an error anyone waits for.
    future.add_done_callback(lambda f: f.cancelled() or f.exception())
    return future


async def _setup_page(page: Page, state: _ContextState) -> None:
    fp, host = state.fp, state.host
    commands: list[tuple[str, dict[str, Any]]] = [
        ("Emulation.setUserAgentOverride", user_agent_override(fp, host)),
    ]
    if host is None or host.locale != fp.locale:
        commands.append(("Emulation.setLocaleOverride", {"locale": fp.locale}))
    if host is None or host.hardware_concurrency != fp.hardware_concurrency:
        commands.append(
            (
                "Emulation.setHardwareConcurrencyOverride",
                {"hardwareConcurrency": fp.hardware_concurrency},
            )
        )
    try:
        session = await page.context.new_cdp_session(page)
        await asyncio.gather(
            *(session.send(method, params) for method, params in commands),
            prime_page_targets(session, state.script),
            _register_worker_scripts(page, session, state),
        )
    except Exception:
        if page.is_closed():
            return
        raise


async def _register_worker_scripts(page: Page, session: CDPSession, state: _ContextState) -> None:
    """Tell the browser's worker-script watch which script this page's context runs."""
    watch = state.worker_scripts
    if watch is None or state.registered:  # once per context, not once per page
        return
    context_id = (await session.send("Target.getTargetInfo"))["targetInfo"]["browserContextId"]
    state.registered = True
    watch.scripts[context_id] = state.script
    page.context.on("close", lambda _context: watch.forget(context_id))


# --- the host ------------------------------------------------------------------------------------
_PROBE_URL = "https://host-probe.invalid/"
_PROBE_JS = """async () => {
  const ua = navigator.userAgentData;
  const he = await ua.getHighEntropyValues(['platformVersion', 'architecture', 'bitness', 'fullVersionList']);
  let vendor = null, renderer = null;
  try {
    const gl = document.createElement('canvas').getContext('webgl');
    const ext = gl && gl.getExtension('WEBGL_debug_renderer_info');
    if (ext) { vendor = gl.getParameter(ext.UNMASKED_VENDOR_WEBGL); renderer = gl.getParameter(ext.UNMASKED_RENDERER_WEBGL); }
  } catch (e) {}
  return {platform: ua.platform, navigatorPlatform: navigator.platform, brands: ua.brands.map(b => b.brand),
          languages: Array.from(navigator.languages), locale: Intl.DateTimeFormat().resolvedOptions().locale,
          platformVersion: he.platformVersion, architecture: he.architecture, bitness: he.bitness,
          hardwareConcurrency: navigator.hardwareConcurrency, deviceMemory: navigator.deviceMemory ?? null,
          vendor, renderer};
}"""


async def probe_host(browser: Browser) -> HostInfo:
    """Read what the real browser reports, in a throwaway context (once per launch).

    A secure context is needed for client hints and ``deviceMemory``; the page is an https URL
    answered by a route, so nothing leaves the machine.
    """
    context = await browser.new_context()
    try:
        page = await context.new_page()
        await page.route(
            _PROBE_URL,
            lambda route: route.fulfill(status=200, content_type="text/html", body="<html></html>"),
        )
        await page.goto(_PROBE_URL)
        data = await page.evaluate(_PROBE_JS)
    finally:
        await context.close()
    families = {v: k for k, v in CH_PLATFORM.items()}
    platform = families.get(data["platform"], host_platform())
    brands = [b for b in data["brands"] if not b.startswith("Not") and b != "Chromium"]
    architecture, bitness = data["architecture"], data["bitness"]
    blank_hints = not architecture
    if blank_hints:
        # Chrome blanks the high-entropy hints when launched with --user-agent; the machine is
        # what navigator.platform says ("Linux x86_64", "Linux aarch64", "Win32", "MacIntel").
        nav = data["navigatorPlatform"].lower()
        architecture = "arm" if ("arm" in nav or "aarch" in nav) else "x86"
        bitness = "64" if ("64" in nav or platform != "linux") else "32"
    return HostInfo(
        chrome_version=browser.version,
        brand=brands[0] if brands else "Chromium",
        platform=platform,
        navigator_platform=data["navigatorPlatform"],
        platform_version=data["platformVersion"],
        architecture=architecture,
        bitness=bitness,
        hardware_concurrency=int(data["hardwareConcurrency"]),
        device_memory=data["deviceMemory"],
        languages=tuple(data["languages"]),
        locale=data["locale"],
        webgl_vendor=data["vendor"],
        webgl_renderer=data["renderer"],
        blank_hints=blank_hints,
    )
