"""An offline automation detector: a page on 127.0.0.1, a server that records headers, and checks.

The page (``detector.js`` + ``probe.js``) reimplements what public detectors look at —
infosimples/detect-headless, Intoli's "headless chrome test", rebrowser-bot-detector and
CreepJS-style comparisons between the page, its iframes (same-origin, srcdoc, a bare about:blank,
a cross-site one on ``localhost``) and its workers (dedicated, blob, shared, service) — and POSTs
the raw facts. The server records every request's ``User-Agent``, ``Accept-Language`` and
``sec-ch-*`` headers. :func:`evaluate_checks` turns both into ``{check_name: passed}``.

    with DetectorServer() as server:
        run = await run_detector(context, server)
        checks, why = evaluate_checks(run)

The detector never imports browserq.stealth: it judges the browser, not the code under test.
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from playwright.async_api import BrowserContext, Page

HERE = Path(__file__).resolve().parent
PROBE_JS = (HERE / "probe.js").read_text()
DETECTOR_JS = (HERE / "detector.js").read_text()

ACCEPT_CH = ", ".join(
    [
        "Sec-CH-UA-Platform-Version",
        "Sec-CH-UA-Full-Version-List",
        "Sec-CH-UA-Arch",
        "Sec-CH-UA-Bitness",
        "Sec-CH-UA-Model",
        "Sec-CH-UA-WoW64",
        "Sec-CH-UA-Form-Factors",
        "Sec-CH-Device-Memory",
    ]
)

FRAME_HTML = """<!doctype html><html><body><script>{probe}</script><script>
const tag = new URLSearchParams(location.search).get('tag');
bqProbe(window).then(probe => parent.postMessage({{tag, probe}}, '*'));
</script></body></html>"""

PAGE_HTML = """<!doctype html><html><head><title>bq detector</title></head><body>
<div id="bq-trigger">trigger</div>
<script>window.BQ_CROSS_ORIGIN = {cross!r};</script>
<script src="/probe.js"></script><script src="/detector.js"></script>
<div style="height: 3000px"></div>
</body></html>"""

WORKER_JS = PROBE_JS + "\nbqProbe(self).then(r => postMessage(r));\n"
SHARED_JS = (
    PROBE_JS
    + "\nonconnect = e => { const port = e.ports[0]; bqProbe(self).then(r => port.postMessage(r)); };\n"
)
SW_JS = (
    PROBE_JS
    + """
self.addEventListener('install', e => self.skipWaiting());
self.addEventListener('activate', e => e.waitUntil(self.clients.claim()));
self.addEventListener('message', e => { bqProbe(self).then(r => e.ports[0].postMessage(r)); });
"""
)


@dataclass
class RecordedRequest:
    path: str
    host: str
    headers: dict[str, str]


@dataclass
class DetectorRun:
    report: dict[str, Any]
    requests: list[RecordedRequest]
    hooks_from_locators: list[dict[str, Any]]
    hooks_from_evaluate: list[dict[str, Any]]
    seconds: float = 0.0


class DetectorServer:
    """The detector page and a header log, on 127.0.0.1 (and ``localhost`` as the cross site)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.requests: list[RecordedRequest] = []
        self.reports: list[dict[str, Any]] = []
        self.hooks: list[dict[str, Any]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _send(
                self, status: int, ctype: str, body: str, extra: dict[str, str] | None = None
            ) -> None:
                data = body.encode()
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(data)))
                self.send_header("Cache-Control", "no-store")
                for k, v in (extra or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                url = urlparse(self.path)
                with server._lock:
                    server.requests.append(
                        RecordedRequest(
                            self.path,
                            self.headers.get("Host", ""),
                            {k.lower(): v for k, v in self.headers.items()},
                        )
                    )
                html = {"Accept-CH": ACCEPT_CH}
                if url.path == "/":
                    self._send(200, "text/html", PAGE_HTML.format(cross=server.cross_origin), html)
                elif url.path == "/frame":
                    self._send(200, "text/html", FRAME_HTML.format(probe=PROBE_JS), html)
                elif url.path == "/probe.js":
                    self._send(200, "text/javascript", PROBE_JS)
                elif url.path == "/detector.js":
                    self._send(200, "text/javascript", DETECTOR_JS)
                elif url.path == "/worker.js":
                    self._send(200, "text/javascript", WORKER_JS)
                elif url.path == "/shared.js":
                    self._send(200, "text/javascript", SHARED_JS)
                elif url.path == "/sw.js":
                    self._send(200, "text/javascript", SW_JS)
                else:
                    self._send(404, "text/plain", "not found")

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length).decode() if length else ""
                try:
                    data = json.loads(body) if body else {}
                except ValueError:
                    data = {"unparsable": body[:200]}
                with server._lock:
                    if self.path.startswith("/report"):
                        server.reports.append(data)
                    elif self.path.startswith("/hook"):
                        server.hooks.append(data)
                self._send(204 if self.path.startswith("/hook") else 200, "text/plain", "")

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self.port = self._httpd.server_address[1]
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.cross_origin = f"http://localhost:{self.port}"
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    def __enter__(self) -> DetectorServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def reset(self) -> None:
        with self._lock:
            self.requests.clear()
            self.reports.clear()
            self.hooks.clear()

    def snapshot(self) -> tuple[list[RecordedRequest], list[dict[str, Any]], list[dict[str, Any]]]:
        with self._lock:
            return list(self.requests), list(self.reports), list(self.hooks)


async def _wait_for(predicate: Callable[[], bool], timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        await asyncio.sleep(0.05)
    return predicate()


async def run_detector(
    context: BrowserContext,
    server: DetectorServer,
    *,
    open_page: Callable[[BrowserContext], Awaitable[Page]] | None = None,
    timeout_s: float = 45.0,
) -> DetectorRun:
    """Open the detector in a new page of ``context``, let it finish, then do what automation
    does (a locator read, then one ``page.evaluate``) and record whether the page saw it."""
    server.reset()
    started = time.monotonic()
    page = await (open_page(context) if open_page else context.new_page())
    try:
        await page.goto(server.base_url + "/")
        if not await _wait_for(lambda: bool(server.snapshot()[1]), timeout_s):
            raise TimeoutError("the detector page did not report")
        await page.locator("#bq-trigger").text_content()
        await asyncio.sleep(0.3)
        hooks_locators = list(server.snapshot()[2])
        await page.evaluate("() => document.getElementById('bq-trigger') !== null")
        await _wait_for(lambda: len(server.snapshot()[2]) > len(hooks_locators), 1.0)
        requests, reports, hooks = server.snapshot()
    finally:
        await page.close()
    report = reports[0]
    if "fatal" in report:
        raise RuntimeError(f"the detector page failed: {report['fatal']}")
    return DetectorRun(
        report, requests, hooks_locators, hooks[len(hooks_locators) :], time.monotonic() - started
    )


# --- the checks ------------------------------------------------------------------------------------
def chrome_accept_language(languages: list[str]) -> str:
    """Accept-Language as Chrome builds it from navigator.languages (base language added,
    q-values falling by 0.1) — written here independently of browserq.stealth."""
    out: list[str] = []
    for i, lang in enumerate(languages):
        out.append(lang)
        base = lang.split("-")[0]
        following = languages[i + 1].split("-")[0] if i + 1 < len(languages) else None
        if base != lang and following != base and base not in languages and base not in out:
            out.append(base)
    return ",".join(
        v if i == 0 else f"{v};q={max(0.1, round(1 - i / 10, 1)):g}" for i, v in enumerate(out)
    )


def _fmt_brands(brands: list[dict[str, str]]) -> str:
    return ", ".join(f'"{b["brand"]}";v="{b["version"]}"' for b in brands)


SOFTWARE_GL = re.compile(r"swiftshader|llvmpipe|softpipe|software|mesa offscreen", re.I)
UTC_ZONES = {"UTC", "Etc/UTC", "Etc/GMT", "GMT", "Etc/Universal"}
#: locale country → plausible timezone prefixes (independent, deliberately coarse)
COUNTRY_ZONES = {
    "US": ("America/",),
    "CA": ("America/",),
    "MX": ("America/",),
    "BR": ("America/",),
    "AR": ("America/",),
    "GB": ("Europe/London",),
    "IE": ("Europe/Dublin",),
    "DE": ("Europe/Berlin", "Europe/Busingen"),
    "AT": ("Europe/Vienna",),
    "CH": ("Europe/Zurich",),
    "FR": ("Europe/Paris",),
    "BE": ("Europe/Brussels",),
    "NL": ("Europe/Amsterdam",),
    "ES": ("Europe/Madrid", "Atlantic/Canary"),
    "PT": ("Europe/Lisbon", "Atlantic/"),
    "IT": ("Europe/Rome",),
    "PL": ("Europe/Warsaw",),
    "CZ": ("Europe/Prague",),
    "SE": ("Europe/Stockholm",),
    "NO": ("Europe/Oslo",),
    "DK": ("Europe/Copenhagen",),
    "FI": ("Europe/Helsinki",),
    "JP": ("Asia/Tokyo",),
    "KR": ("Asia/Seoul",),
    "IN": ("Asia/Kolkata", "Asia/Calcutta"),
    "AU": ("Australia/",),
    "NZ": ("Pacific/Auckland",),
}
HE_KEYS = (
    "architecture",
    "bitness",
    "fullVersionList",
    "model",
    "platformVersion",
    "uaFullVersion",
    "wow64",
    "formFactors",
)


def _os_family_from_ua(ua: str) -> str:
    if "Windows" in ua:
        return "windows"
    if "Macintosh" in ua or "Mac OS X" in ua:
        return "macos"
    if "Android" in ua:
        return "android"
    if "Linux" in ua or "X11" in ua:
        return "linux"
    return "other"


def _surface_probes(report: dict[str, Any]) -> dict[str, list[tuple[str, Any]]]:
    iframes = report.get("iframes", {})
    workers = report.get("workers", {})
    return {
        "iframe": [
            ("same-origin", iframes.get("same")),
            ("srcdoc", iframes.get("srcdoc")),
            ("about:blank", iframes.get("blank")),
        ],
        "cross_site_iframe": [("cross-site", report.get("crossSite"))],
        "worker": [("dedicated", workers.get("dedicated")), ("blob", workers.get("blob"))],
        "shared_worker": [("shared", workers.get("shared"))],
        "service_worker": [("service", workers.get("service"))],
    }


def _compare(
    page: dict[str, Any], probes: list[tuple[str, Any]], pick: Callable[[dict[str, Any]], Any]
) -> tuple[bool, str]:
    want = pick(page)
    bad = []
    for name, probe in probes:
        if not isinstance(probe, dict) or "ua" not in probe:
            bad.append(f"{name}: no report ({probe})")
            continue
        got = pick(probe)
        if got != want:
            bad.append(f"{name}: {got!r} != page {want!r}")
    return (not bad, "; ".join(bad))


def evaluate_checks(run: DetectorRun) -> tuple[dict[str, bool], dict[str, str]]:
    """``({check: passed}, {check: why it failed})`` for one detector run."""
    r = run.report
    page: dict[str, Any] = r["page"]
    results: dict[str, tuple[bool, str]] = {}

    def check(name: str, ok: bool, why: str = "") -> None:
        results[name] = (bool(ok), "" if ok else why)

    ua = page["ua"]
    he = page.get("highEntropy") or {}
    uad = page.get("uaData") or {}
    family = _os_family_from_ua(ua)

    # -- headless markers (infosimples, Intoli) --------------------------------------------------
    check("ua_no_headless", not re.search("headless", ua + page["appVersion"], re.I), ua)
    heads = [
        q for q in run.requests if re.search("headless", q.headers.get("user-agent", ""), re.I)
    ]
    check("ua_header_no_headless", not heads, ", ".join(sorted({q.path for q in heads})))
    all_brands = [b["brand"] for b in uad.get("brands", [])] + [
        b["brand"] for b in he.get("fullVersionList", [])
    ]
    check(
        "uadata_no_headless_brand",
        bool(uad) and not any("headless" in b.lower() for b in all_brands),
        str(all_brands),
    )
    wd = r["webdriver"]
    wd_ok = (
        wd["value"] is False
        and wd["type"] == "boolean"
        and wd["ownNames"] == []
        and not wd["ownDescriptor"]
        and wd["onPrototype"]
        and wd["getterSource"] == "function get webdriver() { [native code] }"
    )
    check("webdriver_false", wd_ok, json.dumps(wd))
    iwd = r.get("iframeWebdriver", {})
    check(
        "webdriver_false_iframe",
        iwd.get("value") is False and iwd.get("own") == [],
        json.dumps(iwd),
    )
    ch = r["chrome"]
    check(
        "chrome_object",
        ch["present"] and ch["loadTimes"] and ch["csi"] and ch["app"],
        json.dumps(ch),
    )
    pl = r["plugins"]
    check(
        "plugins_present",
        pl["plugins"] > 0
        and pl["mimeTypes"] > 0
        and pl["pluginArrayTag"] == "[object PluginArray]"
        and pl["firstIsPlugin"]
        and pl["pdfViewerEnabled"] is True,
        json.dumps(pl),
    )
    langs = page["languages"]
    check(
        "languages_present",
        bool(page["language"]) and bool(langs) and langs[0] == page["language"],
        str(langs),
    )
    perm = r.get("permissions", {})
    pair = (perm.get("notification"), perm.get("query"))
    check(
        "permissions_consistent",
        pair in {("default", "prompt"), ("granted", "granted"), ("denied", "denied")},
        str(pair),
    )
    check("notification_permission_default", pair == ("default", "prompt"), str(pair))

    # -- WebGL ------------------------------------------------------------------------------------
    gl = page.get("webgl") or {}
    renderer, vendor = gl.get("unmaskedRenderer") or "", gl.get("unmaskedVendor") or ""
    check(
        "webgl_not_software",
        bool(renderer) and not SOFTWARE_GL.search(renderer) and vendor != "Google Inc. (Google)",
        f"{vendor} / {renderer}",
    )
    bgl = ((r.get("iframes") or {}).get("blank") or {}).get("webgl") or {}
    check(
        "webgl_iframe_not_software",
        bool(bgl.get("unmaskedRenderer"))
        and not SOFTWARE_GL.search(bgl.get("unmaskedRenderer", "")),
        str(bgl.get("unmaskedRenderer")),
    )
    expected_api = {
        "windows": r"Direct3D|D3D1",
        "macos": r"Metal|Apple|OpenGL",
        "linux": r"OpenGL|Vulkan|Mesa",
    }.get(family)
    check(
        "webgl_matches_platform",
        bool(expected_api and re.search(expected_api, renderer))
        and not (family == "linux" and re.search("Direct3D|Metal", renderer)),
        f"{family}: {renderer}",
    )

    # -- screen and window -------------------------------------------------------------------------
    g = r["geometry"]
    (sw, sh), (al, at, aw, ah) = g["screen"], g["avail"]
    (ow, oh), (iw, ih), (sx, sy, sl, st) = g["outer"], g["inner"], g["position"]
    check(
        "viewport_not_automation_default", (iw, ih) not in {(1280, 720), (800, 600)}, f"{iw}x{ih}"
    )
    check("screen_larger_than_viewport", sw >= iw and sh > ih, f"screen {sw}x{sh}, inner {iw}x{ih}")
    check("outer_size_plausible", ow >= iw and oh - ih >= 50, f"outer {ow}x{oh}, inner {iw}x{ih}")
    check("screen_work_area", ah < sh or aw < sw, f"avail {aw}x{ah} of {sw}x{sh}")
    check(
        "window_within_screen",
        sx >= al - 8 and sy >= at - 8 and sx + ow <= al + aw + 8 and sy + oh <= at + ah + 8,
        f"window at {sx},{sy} size {ow}x{oh}; work area {al},{at} {aw}x{ah}",
    )
    check("window_position_aliases", (sx, sy) == (sl, st), str(g["position"]))
    check("scrollbar_width", family == "macos" or g["scrollbar"] > 0, f"{g['scrollbar']}px")
    check("device_width_media_query", g["deviceWidthMatches"], "")
    ig = r.get("iframeGeometry", {})
    check(
        "iframe_geometry_matches",
        ig.get("avail") == [aw, ah] and ig.get("outer") == [ow, oh],
        json.dumps(ig),
    )
    rtt = r.get("connectionRtt")
    check("connection_rtt_nonzero", rtt is None or rtt > 0, str(rtt))

    # -- user agent and client hints, in the page ---------------------------------------------------
    ua_major = (re.search(r"Chrome/(\d+)", ua) or [None, None])[1]
    chromium = [b["version"] for b in uad.get("brands", []) if b["brand"] == "Chromium"]
    full_chromium = [
        b["version"].split(".")[0]
        for b in he.get("fullVersionList", [])
        if b["brand"] == "Chromium"
    ]
    check(
        "ua_version_matches_uadata",
        bool(ua_major)
        and chromium == [ua_major]
        and full_chromium == [ua_major]
        and str(he.get("uaFullVersion", "")).split(".")[0] == ua_major,
        f"UA {ua_major}, brands {chromium}, full {full_chromium}",
    )
    nav_family = {"Win32": "windows", "MacIntel": "macos"}.get(
        page["platform"], "linux" if page["platform"].startswith("Linux") else "other"
    )
    ch_family = {"Windows": "windows", "macOS": "macos", "Linux": "linux"}.get(
        uad.get("platform", ""), "other"
    )
    check(
        "platform_matches_ua",
        family == nav_family == ch_family,
        f"UA {family}, navigator.platform {page['platform']}, uaData {uad.get('platform')}",
    )
    grease = [b for b in uad.get("brands", []) if re.fullmatch(r"Not.A.Brand", b["brand"])]
    plausible = (
        uad.get("mobile") is False
        and he.get("model") == ""
        and he.get("bitness") == "64"
        and he.get("architecture") in {"x86", "arm"}
        and "Desktop" in (he.get("formFactors") or [])
        and he.get("wow64") is False
        and len(grease) == 1
        and bool(chromium)
        and (family == "linux" or bool(he.get("platformVersion")))
    )
    check("uadata_plausible", plausible, json.dumps({"uaData": uad, "highEntropy": he}))

    tz, locale = page.get("timezone", ""), page.get("locale", "")
    country = locale.split("-")[-1].upper() if "-" in locale else ""
    zones = COUNTRY_ZONES.get(country)
    check(
        "timezone_plausible",
        tz not in UTC_ZONES and (zones is None or tz.startswith(zones)),
        f"{tz} for {locale}",
    )

    # -- headers vs JavaScript ------------------------------------------------------------------------
    doc = next((q for q in run.requests if q.path == "/"), None)
    frame = next((q for q in run.requests if q.path.startswith("/frame?tag=same")), None)
    if doc is None or frame is None:
        raise RuntimeError("the detector server did not see the page or frame request")
    uas = {q.headers.get("user-agent") for q in run.requests}
    check("ua_header_matches_js", uas == {ua}, f"headers {sorted(map(str, uas))} vs JS {ua}")
    expected_al = chrome_accept_language(langs)
    als = {q.headers.get("accept-language") for q in run.requests}
    check(
        "accept_language_matches_js",
        als == {expected_al},
        f"headers {sorted(map(str, als))} vs expected {expected_al} for {langs}",
    )
    low = (
        doc.headers.get("sec-ch-ua") == _fmt_brands(uad.get("brands", []))
        and doc.headers.get("sec-ch-ua-mobile") == ("?1" if uad.get("mobile") else "?0")
        and doc.headers.get("sec-ch-ua-platform") == f'"{uad.get("platform")}"'
    )
    check(
        "ch_low_entropy_headers_match_js",
        low,
        json.dumps({k: v for k, v in doc.headers.items() if k.startswith("sec-ch")}),
    )
    fh = frame.headers
    high = (
        fh.get("sec-ch-ua-full-version-list") == _fmt_brands(he.get("fullVersionList", []))
        and fh.get("sec-ch-ua-platform-version") == f'"{he.get("platformVersion")}"'
        and fh.get("sec-ch-ua-arch") == f'"{he.get("architecture")}"'
        and fh.get("sec-ch-ua-bitness") == f'"{he.get("bitness")}"'
        and fh.get("sec-ch-ua-model") == f'"{he.get("model")}"'
        and fh.get("sec-ch-ua-wow64") == ("?1" if he.get("wow64") else "?0")
    )
    check(
        "ch_high_entropy_headers_match_js",
        high,
        json.dumps({k: v for k, v in fh.items() if k.startswith("sec-ch")}),
    )
    dm_header = fh.get("sec-ch-device-memory")
    check(
        "device_memory_header_matches_js",
        dm_header is None or float(dm_header) == float(page.get("deviceMemory") or -1),
        f"header {dm_header} vs JS {page.get('deviceMemory')}",
    )

    # -- surfaces vs page (CreepJS-style) -------------------------------------------------------------
    def uadata_view(p: dict[str, Any]) -> Any:
        h = p.get("highEntropy") or {}
        return (p.get("uaData"), {k: h.get(k) for k in HE_KEYS})

    views: dict[str, Callable[[dict[str, Any]], Any]] = {
        "ua": lambda p: p.get("ua"),
        "uadata": uadata_view,
        "platform": lambda p: p.get("platform"),
        "languages": lambda p: (p.get("language"), p.get("languages")),
        "hardware": lambda p: (p.get("hardwareConcurrency"), p.get("deviceMemory")),
        "intl": lambda p: (p.get("timezone"), p.get("locale")),
        "webgl": lambda p: (
            (p.get("webgl") or {}).get("unmaskedVendor"),
            (p.get("webgl") or {}).get("unmaskedRenderer"),
        ),
    }
    for surface, probes in _surface_probes(r).items():
        for view, pick in views.items():
            ok, why = _compare(page, probes, pick)
            check(f"{surface}_{view}_matches", ok, why)

    # -- patches must not show ---------------------------------------------------------------------
    bad = [f"{f['label']}: {', '.join(f['problems'])}" for f in r["functions"] if f["problems"]]
    check("functions_look_native", not bad, " | ".join(bad))
    bad = [
        f"{f['label']}: {', '.join(f['problems'])}" for f in r["functionsInIframe"] if f["problems"]
    ]
    check("functions_look_native_iframe", not bad, " | ".join(bad))
    # the same in every other scope: cross-site iframe, dedicated, shared and service workers
    bad = [
        f"{name}: {problem}"
        for probes in _surface_probes(r).values()
        for name, probe in probes
        if isinstance(probe, dict)
        for problem in probe.get("tampered", [])
    ]
    check("functions_look_native_in_workers_and_frames", not bad, " | ".join(bad)[:600])
    check("no_automation_globals", not r["globals"], str(r["globals"]))

    # -- CDP / driver tells -------------------------------------------------------------------------
    dt = r["devtools"]
    check(
        "runtime_enable_console_silent",
        dt["errorStackReads"] == 0,
        f"stack getter read {dt['errorStackReads']}x",
    )
    check(
        "runtime_enable_prepare_stack_trace_silent",
        dt["prepareStackTraceCalls"] == 0,
        f"Error.prepareStackTrace called {dt['prepareStackTraceCalls']}x by console.debug",
    )
    check(
        "console_regex_tostring_silent",
        dt["regexToString"] <= 1,
        f"toString called {dt['regexToString']}x",
    )
    check(
        "locator_actions_invisible",
        not run.hooks_from_locators,
        json.dumps(run.hooks_from_locators)[:300],
    )
    check(
        "main_world_evaluate_invisible",
        not run.hooks_from_evaluate,
        f"{len(run.hooks_from_evaluate)} main-world hook hit(s)",
    )
    leaked = [
        h
        for h in run.hooks_from_evaluate
        if re.search(r"UtilityScript|pptr:|__puppeteer", h.get("stack", ""))
    ]
    check("no_automation_frames_in_stack", not leaked, (leaked[0]["stack"][:300] if leaked else ""))

    return {k: v[0] for k, v in results.items()}, {k: v[1] for k, v in results.items() if not v[0]}


#: Tells of the automation driver itself (Playwright keeps CDP's Runtime domain enabled and runs
#: page.evaluate in the main world through its UtilityScript): no browser flag, context option or
#: init script can hide them; only a patched driver could. Kept in the table, listed separately.
CDP_TELLS = (
    "runtime_enable_prepare_stack_trace_silent",
    "main_world_evaluate_invisible",
    "no_automation_frames_in_stack",
)
