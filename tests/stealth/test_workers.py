"""The identity in worker scopes (browserq/stealth/workers.py): a stealth context's dedicated,
shared and service workers — from URLs, a gzip-compressed one too — report the identity's WebGL,
while a plain context in the same browser gets the very same scripts untouched."""

from __future__ import annotations

import gzip
import json
from http.server import BaseHTTPRequestHandler
from typing import Any, ClassVar

from browserq import stealth
from tests.stealth.conftest import launched, run, stealth_context
from tests.support.http import serve_http

PROBE = b"""
const gl = new OffscreenCanvas(4, 4).getContext('webgl');
const ext = gl.getExtension('WEBGL_debug_renderer_info');
const seen = [gl.getParameter(ext.UNMASKED_VENDOR_WEBGL), gl.getParameter(ext.UNMASKED_RENDERER_WEBGL), navigator.platform];
"""
SCRIPTS = {
    "/dedicated.js": PROBE + b"postMessage(seen);",
    "/zipped.js": PROBE + b"postMessage(seen);",
    "/shared.js": PROBE + b"onconnect = e => e.ports[0].postMessage(seen);",
    "/sw.js": PROBE + b"""self.addEventListener('install', e => self.skipWaiting());
self.addEventListener('activate', e => e.waitUntil(self.clients.claim()));
self.addEventListener('message', e => e.ports[0].postMessage(seen));""",
}
PAGE = b"""<html><body><pre id="out"></pre><script>
(async () => {
  const one = (make) => new Promise((ok, fail) => { make(ok); setTimeout(() => fail('timeout'), 8000); });
  const dedicated = await one(ok => { const w = new Worker('/dedicated.js'); w.onmessage = e => ok(e.data); });
  const zipped = await one(ok => { const w = new Worker('/zipped.js'); w.onmessage = e => ok(e.data); });
  const shared = await one(ok => { const w = new SharedWorker('/shared.js'); w.port.onmessage = e => ok(e.data); });
  const reg = await navigator.serviceWorker.register('/sw.js'); await navigator.serviceWorker.ready;
  const service = await one(ok => { const c = new MessageChannel(); c.port1.onmessage = e => ok(e.data); reg.active.postMessage(0, [c.port2]); });
  return {dedicated, zipped, shared, service};
})().then(seen => { document.getElementById('out').textContent = JSON.stringify(seen); },
          error => { document.getElementById('out').textContent = JSON.stringify({error: String(error)}); });
</script></body></html>"""


class WorkerSite(BaseHTTPRequestHandler):
    served: ClassVar[list[str]] = []

    def log_message(self, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self.served.append(self.path)
        body, kind, extra = PAGE, "text/html", {}
        if self.path in SCRIPTS:
            body, kind = SCRIPTS[self.path], "text/javascript"
            if self.path == "/zipped.js":
                body, extra = gzip.compress(body), {"Content-Encoding": "gzip"}
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        for key, value in extra.items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(body)


async def _seen(page: Any) -> Any:
    """What the page's workers answered (read from the DOM: any driver's evaluate world sees it)."""
    out = page.locator("#out")
    await out.filter(has_text="{").wait_for(timeout=20_000)
    return json.loads(await out.text_content() or "{}")


def test_a_stealth_contexts_workers_carry_its_identity_and_a_plain_contexts_do_not() -> None:
    async def go() -> tuple[Any, Any, stealth.Fingerprint, stealth.HostInfo]:
        with serve_http(WorkerSite) as host_port:
            async with launched(stealth_pool=True) as browser:
                host = await stealth.probe_host(browser)
                fp = stealth.Fingerprint.generate("worker-test", chrome_version=host.chrome_version, host=host)
                context = await stealth_context(browser, fp, host)
                page = await stealth.new_page(context)
                await page.goto(f"http://{host_port}/")
                dressed = await _seen(page)
                plain_context = await browser.new_context()
                plain = await plain_context.new_page()
                await plain.goto(f"http://{host_port}/")
                bare = await _seen(plain)
                return dressed, bare, fp, host

    dressed, bare, fp, host = run(go)
    assert fp.webgl_renderer != host.webgl_renderer
    for kind in ("dedicated", "zipped", "shared", "service"):
        assert dressed[kind] == [fp.webgl_vendor, fp.webgl_renderer, fp.navigator_platform], kind
        assert bare[kind] == [host.webgl_vendor, host.webgl_renderer, host.navigator_platform], kind
