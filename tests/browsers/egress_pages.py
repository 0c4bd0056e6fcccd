"""One page per way a page can make the browser talk to a host (see docs/security.md).

``__F__`` is the foreign origin, ``__FWS__`` its ws: form, ``__FH__`` its host, ``__TP__`` / ``__UP__``
its TCP / UDP port, ``__A__`` the allowed origin. Each page ends with ``settle(...)``.
"""

from __future__ import annotations

from dataclasses import dataclass

from tests.browsers.egress_sites import Page


@dataclass(frozen=True)
class Path:
    page: Page
    #: "document": stopped in both modes, the blocked URL recorded as a document;
    #: "subresource": stopped in strict mode (open mode lets subresources go, by design), counted;
    #: "strict": stopped in strict mode before any request exists (nothing for the guard to record);
    #: "never": no foreign traffic in either mode, nothing recorded.
    stopped: str
    recorded: str = ""  # the URL part (document) or resource type (subresource) on record
    #: Loaded only by the full Chromium (its PDF viewer): on the headless shell nothing is
    #: fetched, so nothing reaches the foreign host and nothing is on record.
    full_chromium_only: bool = False


def _js(code: str) -> str:
    return f"<p id='ok'>egress</p><script>{code}</script>"


_PC = "new RTCPeerConnection({iceServers: [__SERVERS__]})"


def _webrtc(servers: str, *, remote: bool = False) -> str:
    """An offer with a data channel, gathered until complete (or 5 s); candidates as the result."""
    pc = _PC.replace("__SERVERS__", servers)
    extra = ""
    if remote:  # a remote host candidate on the foreign host: connectivity checks would go there
        extra = """
      const remote = new RTCPeerConnection(); remote.createDataChannel('x');
      await remote.setRemoteDescription(pc.localDescription);
      await remote.setLocalDescription(await remote.createAnswer());
      await pc.setRemoteDescription(remote.localDescription);
      await pc.addIceCandidate({candidate: 'candidate:1 1 udp 2122260223 __FH__ __UP__ typ host',
                                sdpMid: '0', sdpMLineIndex: 0}).catch(() => 0);"""
    return _js(f"""settle((async () => {{
      const pc = {pc}; const found = [];
      pc.onicecandidate = (e) => e.candidate && found.push(e.candidate.type);
      pc.createDataChannel('d');
      await pc.setLocalDescription(await pc.createOffer());
      await new Promise((r) => {{ if (pc.iceGatheringState === 'complete') r();
        pc.onicegatheringstatechange = () => pc.iceGatheringState === 'complete' && r(); setTimeout(r, 5000); }});
      {extra}
      return 'candidates: ' + found.join(',');
    }})())""")


PATHS: dict[str, Path] = {
    # --- documents: the Fetch guard pauses them in both modes -----------------------------------
    "nav-location": Path(
        Page(_js("location = '__F__/nav-location'; settle(later(300))")),
        "document",
        "/nav-location",
    ),
    "nav-iframe": Path(
        Page("<iframe src='__F__/nav-iframe'></iframe><script>settle(later(300))</script>"),
        "document",
        "/nav-iframe",
    ),
    "nav-window-open": Path(
        Page(
            "<button id='go' onclick=\"window.open('__F__/nav-popup')\">go</button>"
            "<script>settle(later(500))</script>",
            click=True,
        ),
        "document",
        "/nav-popup",
    ),
    "nav-meta-refresh": Path(
        Page(
            "<meta http-equiv='refresh' content='0;url=__F__/nav-meta'>"
            "<script>settle(later(500))</script>"
        ),
        "document",
        "/nav-meta",
    ),
    "nav-form-post": Path(
        Page(
            "<form id='f' method='post' action='__F__/nav-form'><input name='q' value='1'></form>"
            "<script>document.getElementById('f').submit(); settle(later(300))</script>"
        ),
        "document",
        "/nav-form",
    ),
    "nav-object": Path(
        Page(
            "<object data='__F__/nav-object' type='text/html'></object>"
            "<script>settle(later(300))</script>"
        ),
        "document",
        "/nav-object",
    ),
    "pdf-embed": Path(
        Page(
            "<embed src='__F__/doc.pdf' type='application/pdf'><script>settle(later(500))</script>"
        ),
        "document",
        "/doc.pdf",
        full_chromium_only=True,
    ),
    # --- speculation rules and prerender: documents fetched ahead of a navigation ------------------
    "spec-prefetch": Path(
        Page(
            '<script type=\'speculationrules\'>{"prefetch": [{"source": "list",'
            ' "urls": ["__F__/spec-prefetch"]}]}</script><script>settle(later(1000))</script>'
        ),
        "never",
    ),
    "spec-prerender": Path(
        Page(
            '<script type=\'speculationrules\'>{"prerender": [{"source": "list",'
            ' "urls": ["__F__/spec-prerender"]}]}</script><script>settle(later(1000))</script>'
        ),
        "never",
    ),
    "spec-document-rules": Path(
        Page(
            "<a href='__F__/spec-doc-prefetch'>a</a><a href='__F__/spec-doc-prerender'>b</a>"
            '<script type=\'speculationrules\'>{"prefetch": [{"where": {"href_matches": "__F__/spec-doc-prefetch"},'
            ' "eagerness": "immediate"}], "prerender": [{"where": {"href_matches": "__F__/spec-doc-prerender"},'
            ' "eagerness": "immediate"}]}</script><script>settle(later(1000))</script>'
        ),
        "never",
    ),
    "spec-inserted-by-script": Path(
        Page(
            _js(
                "const s = document.createElement('script'); s.type = 'speculationrules';"
                " s.textContent = JSON.stringify({prerender: [{source: 'list', urls: ['__F__/spec-js-prerender']}],"
                " prefetch: [{source: 'list', urls: ['__F__/spec-js-prefetch']}]}); document.head.append(s);"
                " settle(later(1000))"
            )
        ),
        "never",
    ),
    "spec-in-fresh-iframe": Path(
        Page(
            _js(
                "const f = document.createElement('iframe'); document.body.append(f); const d = f.contentDocument;"
                " const s = d.createElement('script'); s.type = 'speculationrules';"
                " s.textContent = JSON.stringify({prefetch: [{source: 'list', urls: ['__F__/spec-iframe-prefetch']}]});"
                " d.head.append(s); settle(later(1000))"
            )
        ),
        "never",
    ),
    "spec-header": Path(
        Page(
            "<script>settle(later(1000))</script>", headers={"Speculation-Rules": '"/rules.json"'}
        ),
        "never",
    ),
    "link-prerender": Path(
        Page(
            "<link rel='prerender' href='__F__/link-prerender'><script>settle(later(1000))</script>"
        ),
        "never",
    ),
    # --- subresources: the Fetch guard pauses every request in strict mode -------------------------
    "img": Path(
        Page(
            _js(
                "const i = new Image(); settle(new Promise((r) => { i.onload = i.onerror = r; }));"
                " i.src = '__F__/img.png';"
            )
        ),
        "subresource",
        "image",
    ),
    "script": Path(
        Page(
            _js(
                "const s = document.createElement('script'); settle(new Promise((r) => {"
                " s.onload = s.onerror = r; })); s.src = '__F__/script.js'; document.head.append(s);"
            )
        ),
        "subresource",
        "script",
    ),
    "stylesheet": Path(
        Page("<link rel='stylesheet' href='__F__/style.css'><script>settle(later(300))</script>"),
        "subresource",
        "stylesheet",
    ),
    "css-import-and-url": Path(
        Page(
            "<style>@import url('__F__/import.css'); body { background: url('__F__/bg.png') }"
            "</style><script>settle(later(300))</script>"
        ),
        "subresource",
        "stylesheet",
    ),
    "font": Path(
        Page(
            "<style>@font-face { font-family: X; src: url('__F__/font.woff2') } p { font-family: X }</style>"
            "<p>text</p><script>settle(document.fonts.load('16px X').then(() => 'done'))</script>"
        ),
        "subresource",
        "font",
    ),
    "media": Path(
        Page(
            "<video src='__F__/video.mp4' preload='auto'></video><script>settle(later(500))</script>"
        ),
        "subresource",
        "media",
    ),
    "fetch": Path(Page(_js("settle(fetch('__F__/fetch'))")), "subresource", "xhr"),
    "xhr": Path(
        Page(
            _js(
                "const x = new XMLHttpRequest(); x.open('GET', '__F__/xhr');"
                " settle(new Promise((r) => { x.onloadend = r; })); x.send();"
            )
        ),
        "subresource",
        "xhr",
    ),
    "beacon": Path(
        Page(_js("settle(navigator.sendBeacon('__F__/beacon', 'x') && later(300))")),
        "subresource",
        "ping",
    ),
    "a-ping": Path(
        Page(
            "<a id='go' href='#here' ping='__F__/a-ping'>go</a><script>settle(later(500))</script>",
            click=True,
        ),
        "subresource",
        "ping",
    ),
    "link-prefetch": Path(
        Page("<link rel='prefetch' href='__F__/link-prefetch'><script>settle(later(500))</script>"),
        "subresource",
    ),
    "link-preload": Path(
        Page(
            "<link rel='preload' as='fetch' crossorigin href='__F__/link-preload'>"
            "<script>settle(later(300))</script>"
        ),
        "subresource",
    ),
    "link-modulepreload": Path(
        Page(
            "<link rel='modulepreload' href='__F__/module.js'><script>settle(later(300))</script>"
        ),
        "subresource",
        "script",
    ),
    "favicon": Path(
        Page("<link rel='icon' href='__F__/favicon.ico'><script>settle(later(500))</script>"),
        "never",
    ),
    "event-source": Path(
        Page(
            _js(
                "const e = new EventSource('__F__/events');"
                " settle(new Promise((r) => { e.onerror = () => { e.close(); r('error'); }; }))"
            )
        ),
        "subresource",
        "xhr",
    ),
    "early-hints": Path(
        Page(
            "<script>settle(later(300))</script>",
            early_hints="<__F__/early.css>; rel=preload; as=style",
        ),
        "never",
    ),
    "csp-report-uri": Path(
        Page(
            "<img src='/blocked-by-csp.png'><script>settle(later(500))</script>",
            headers={"Content-Security-Policy": "img-src 'none'; report-uri __F__/csp-report"},
        ),
        "subresource",
        "cspviolationreport",
    ),
    # --- WebSocket: a Playwright route in the page; Fetch does not see WebSockets ------------------
    "websocket": Path(
        Page(
            _js(
                "const w = new WebSocket('__FWS__/ws');"
                " settle(new Promise((r) => { w.onerror = w.onclose = () => r('closed'); }))"
            )
        ),
        "subresource",
        "websocket",
    ),
    "websocket-worker": Path(
        Page(
            _js(
                "const w = new Worker(URL.createObjectURL(new Blob([\"try { const s = new WebSocket('__FWS__/ws-worker');"
                " s.onerror = s.onclose = () => postMessage('closed'); } catch (e) { postMessage('threw') }\"])));"
                " settle(new Promise((r) => { w.onmessage = (e) => r(e.data); }))"
            )
        ),
        "strict",
    ),
    "websocket-fresh-iframe-realm": Path(
        Page(
            _js(
                "const f = document.createElement('iframe'); document.body.append(f);"
                " const w = new f.contentWindow.WebSocket('__FWS__/ws-iframe');"
                " settle(new Promise((r) => { w.onerror = w.onclose = () => r('closed'); w.onopen = () => r('open'); }))"
            )
        ),
        "subresource",
        "websocket",
    ),
    "websocket-stream": Path(
        Page(
            _js(
                "settle(typeof WebSocketStream !== 'function' ? 'absent' : (async () => new WebSocketStream('__FWS__/ws-stream')"
                ".opened.then(() => 'open', () => 'error'))())"
            )
        ),
        "strict",
    ),
    # --- workers ------------------------------------------------------------------------------------
    "worker-fetch": Path(
        Page(
            _js(
                "const w = new Worker(URL.createObjectURL(new Blob([\"fetch('__F__/worker-fetch')"
                ".then(() => postMessage('ok'), () => postMessage('error'))\"])));"
                " settle(new Promise((r) => { w.onmessage = (e) => r(e.data); }))"
            )
        ),
        "subresource",
        "xhr",
    ),
    "worker-importscripts": Path(
        Page(
            _js(
                'const w = new Worker(URL.createObjectURL(new Blob(["try {'
                " importScripts('__F__/imported.js') } catch (e) {} postMessage('done')\"])));"
                " settle(new Promise((r) => { w.onmessage = (e) => r(e.data); }))"
            )
        ),
        "subresource",
        "script",
    ),
    "worker-cross-origin-script": Path(
        Page(_js("try { new Worker('__F__/worker.js') } catch (e) {} settle(later(300))")), "never"
    ),
    "shared-worker-fetch": Path(
        Page(
            _js(
                "const w = new SharedWorker('/w/shared.js'); w.port.start();"
                " settle(new Promise((r) => { w.port.onmessage = (e) => r(e.data); }))"
            )
        ),
        "subresource",
        "xhr",
    ),
    "service-worker-fetch": Path(
        Page(
            _js(
                "settle(navigator.serviceWorker.register('/w/service.js').then((reg) => new Promise((r) => {"
                " const sw = reg.installing || reg.waiting || reg.active; if (!sw || sw.state === 'activated') r('activated');"
                " else sw.onstatechange = () => ['activated', 'redundant'].includes(sw.state) && r(sw.state); })))"
            )
        ),
        "subresource",
        "",
    ),
    # --- connections without a request: stopped before they start -----------------------------------
    "preconnect": Path(
        Page("<link rel='preconnect' href='__F__'><script>settle(later(500))</script>"), "never"
    ),
    "dns-prefetch": Path(
        Page("<link rel='dns-prefetch' href='//__FH__:__TP__'><script>settle(later(300))</script>"),
        "never",
    ),
    # --- WebRTC and WebTransport: not HTTP, not seen by Fetch ----------------------------------------
    "webrtc-stun": Path(Page(_webrtc("{urls: 'stun:__FH__:__UP__'}")), "strict"),
    "webrtc-turn-udp": Path(
        Page(_webrtc("{urls: 'turn:__FH__:__UP__', username: 'u', credential: 'p'}")), "strict"
    ),
    "webrtc-turn-tcp": Path(
        Page(_webrtc("{urls: 'turn:__FH__:__TP__?transport=tcp', username: 'u', credential: 'p'}")),
        "strict",
    ),
    "webrtc-remote-candidate": Path(Page(_webrtc("", remote=True)), "strict"),
    "webrtc-fresh-iframe-realm": Path(
        Page(
            _js(
                "const f = document.createElement('iframe'); document.body.append(f);"
                " const pc = new f.contentWindow.RTCPeerConnection({iceServers: [{urls: 'stun:__FH__:__UP__'}]});"
                " pc.createDataChannel('d'); settle(pc.createOffer().then((o) => pc.setLocalDescription(o))"
                ".then(() => new Promise((r) => { pc.onicegatheringstatechange = () =>"
                " pc.iceGatheringState === 'complete' && r('complete'); setTimeout(r, 5000); })))"
            )
        ),
        "strict",
    ),
    "webtransport-worker": Path(
        Page(
            _js(
                "const w = new Worker(URL.createObjectURL(new Blob([\"try { const t = new WebTransport('https://__FH__:__UP__/wt');"
                " t.ready.then(() => postMessage('ready'), (e) => postMessage('error')); } catch (e) { postMessage('threw') }\"])));"
                " settle(new Promise((r) => { w.onmessage = (e) => r(e.data); }))"
            )
        ),
        "strict",
    ),
    "webtransport-url-worker": Path(
        Page(
            _js(
                "const w = new Worker('/w/wt.js'); settle(new Promise((r) => { w.onmessage = (e) => r(e.data); }))"
            )
        ),
        "strict",
    ),
    "websocket-module-blob-worker": Path(
        Page(
            _js(
                "const u = URL.createObjectURL(new Blob([\"try { const s = new WebSocket('__FWS__/ws-module');"
                " s.onerror = s.onclose = () => postMessage('closed'); } catch (e) { postMessage('threw') }\"],"
                " {type: 'text/javascript'})); const w = new Worker(u, {type: 'module'}); URL.revokeObjectURL(u);"
                " settle(new Promise((r) => { w.onmessage = (e) => r(e.data); }))"
            )
        ),
        "strict",
    ),
    "webtransport": Path(
        Page(
            _js(
                "settle((async () => { try { const t = new WebTransport('https://__FH__:__UP__/wt');"
                " await Promise.race([t.ready, later(3000)]); return 'ready?'; }"
                " catch (e) { return 'error: ' + e.name; } })())"
            )
        ),
        "strict",
    ),
}
