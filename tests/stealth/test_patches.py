"""The init-script patches, looked at closely: every realm, no traces, native behaviour."""

from __future__ import annotations

from typing import Any

import pytest

from browserq import stealth
from tests.stealth.conftest import launched, run, stealth_context
from tests.stealth.detector import DetectorServer

pytestmark = pytest.mark.timeout(120)

VERSION_FALLBACK = "156.0.8078.108"

WEBGL_EVERYWHERE = """async () => {
  const read = (gl) => {
    const ext = gl.getExtension('WEBGL_debug_renderer_info');
    return [gl.getParameter(ext.UNMASKED_VENDOR_WEBGL), gl.getParameter(ext.UNMASKED_RENDERER_WEBGL),
            String(gl.getParameter(gl.VERSION)).slice(0, 9)];
  };
  const frame = (attrs) => { const f = document.createElement('iframe'); Object.assign(f, attrs); document.body.appendChild(f); return f; };
  const out = {};
  out.canvas = read(document.createElement('canvas').getContext('webgl'));
  out.webgl2 = read(document.createElement('canvas').getContext('webgl2'));
  out.offscreen = read(new OffscreenCanvas(8, 8).getContext('webgl'));
  const blank = frame({});
  out.blank = read(blank.contentWindow.document.createElement('canvas').getContext('webgl'));
  const nested = blank.contentWindow.document.createElement('iframe');
  blank.contentWindow.document.body.appendChild(nested);
  out.nested = read(nested.contentWindow.document.createElement('canvas').getContext('webgl'));
  const srcdoc = frame({srcdoc: '<p>x</p>'});
  await new Promise(r => srcdoc.onload = r);
  out.srcdoc = read(srcdoc.contentWindow.document.createElement('canvas').getContext('webgl'));
  return out;
}"""

TRACES = """() => {
  const d = (o, k) => { const x = Object.getOwnPropertyDescriptor(o, k); return x && [typeof x.get, typeof x.set, typeof x.value, x.enumerable, x.configurable, x.writable]; };
  return {
    windowNames: Object.getOwnPropertyNames(window).sort(),
    windowSymbols: Object.getOwnPropertySymbols(window).map(String),
    navigatorOwn: Object.getOwnPropertyNames(navigator),
    fnProtoNames: Object.getOwnPropertyNames(Function.prototype).sort(),
    fnProtoSymbols: Object.getOwnPropertySymbols(Function.prototype).map(String),
    descriptors: {
      getParameter: d(WebGLRenderingContext.prototype, 'getParameter'),
      getParameter2: d(WebGL2RenderingContext.prototype, 'getParameter'),
      toString: d(Function.prototype, 'toString'),
      deviceMemory: d(Navigator.prototype, 'deviceMemory'),
      availHeight: d(Screen.prototype, 'availHeight'),
      outerWidth: d(window, 'outerWidth'),
      screenX: d(window, 'screenX'),
    },
    lengths: [WebGLRenderingContext.prototype.getParameter.length, Function.prototype.toString.length,
              Object.getOwnPropertyDescriptor(window, 'outerWidth').get.length],
  };
}"""

WRONG_RECEIVER = """() => {
  const out = [];
  const targets = [WebGLRenderingContext.prototype.getParameter, Function.prototype.toString,
                   Object.getOwnPropertyDescriptor(Screen.prototype, 'availHeight').get,
                   Object.getOwnPropertyDescriptor(window, 'outerWidth').get];
  for (const limit of [10, 2, 1]) {
    Error.stackTraceLimit = limit;
    for (const fn of targets) {
      try { fn.call({}, 37446); out.push('no throw'); }
      catch (e) { out.push([e.constructor.name, e.message, e.stack]); }
    }
  }
  Error.stackTraceLimit = 10;
  return out;
}"""

DETACHED = """async () => {
  const f = document.createElement('iframe'); document.body.appendChild(f);
  const foreign = [f.contentWindow.WebGLRenderingContext.prototype.getParameter, f.contentWindow.Function.prototype.toString,
                   Object.getOwnPropertyDescriptor(f.contentWindow.Screen.prototype, 'availTop').get];
  f.remove();
  const fresh = document.createElement('iframe'); document.body.appendChild(fresh);
  const here = WebGLRenderingContext.prototype.getParameter;
  return [
    ...foreign.map(fn => Function.prototype.toString.call(fn)),
    fresh.contentWindow.Function.prototype.toString.call(here),
    Function.prototype.toString.call(Function.prototype.toString.call),
    Function.prototype.toString.toString.toString(),
  ];
}"""


async def _contexts(browser: Any, host: Any, fp: stealth.Fingerprint) -> tuple[Any, Any]:
    plain = await browser.new_context(**stealth.context_options(fp))
    return plain, await stealth_context(browser, fp, host)


def test_patches_everywhere_and_invisible(detector_server: DetectorServer) -> None:
    async def go() -> dict[str, Any]:
        async with launched(stealth_pool=True) as browser:
            host = await stealth.probe_host(browser)
            fp = stealth.Fingerprint.generate(
                "patch-test", chrome_version=host.chrome_version, host=host
            )
            plain, patched = await _contexts(browser, host, fp)
            url = detector_server.base_url + "/frame?tag=patches"
            p_page = await plain.new_page()
            s_page = await stealth.new_page(patched)
            await p_page.goto(url)
            await s_page.goto(url)
            out = {
                "webgl": await s_page.evaluate(WEBGL_EVERYWHERE),
                "plain_webgl": await p_page.evaluate(WEBGL_EVERYWHERE),
                "traces": (await p_page.evaluate(TRACES), await s_page.evaluate(TRACES)),
                "errors": (
                    await p_page.evaluate(WRONG_RECEIVER),
                    await s_page.evaluate(WRONG_RECEIVER),
                ),
                "detached": await s_page.evaluate(DETACHED),
                "fp": fp,
            }
            # A popup opened by the page carries the identity too (init script + per-page CDP).
            async with s_page.expect_popup() as popup_info:
                await s_page.evaluate("url => { window.open(url); }", url)
            popup = await popup_info.value
            await stealth.ready(popup)
            await popup.wait_for_load_state()
            out["popup"] = await popup.evaluate(
                "() => [navigator.userAgent, Object.getOwnPropertyDescriptor(window, 'outerWidth').get.toString(), screen.availHeight]"
            )
            with pytest.raises(RuntimeError, match="already"):
                await stealth.apply(patched, fp)
            return out

    out = run(go)
    fp: stealth.Fingerprint = out["fp"]
    for realm, (vendor, renderer, version) in out["webgl"].items():
        assert (vendor, renderer) == (fp.webgl_vendor, fp.webgl_renderer), realm
        assert version.startswith("WebGL"), realm
    assert [v[2] for v in out["webgl"].values()] == [v[2] for v in out["plain_webgl"].values()]

    plain_traces, stealth_traces = out["traces"]
    assert stealth_traces == plain_traces  # same globals, symbols, descriptors, lengths
    assert stealth_traces["navigatorOwn"] == []

    plain_errors, stealth_errors = out["errors"]
    assert stealth_errors == plain_errors
    assert all(e[0] == "TypeError" for e in stealth_errors)

    for source in out["detached"]:
        assert source.endswith("() { [native code] }") and source.startswith("function "), source

    assert out["popup"][0] == fp.user_agent
    assert out["popup"][1] == "function get outerWidth() { [native code] }"
    assert out["popup"][2] == fp.avail[3]


def test_a_context_without_stealth_is_untouched(detector_server: DetectorServer) -> None:
    """stealth state is per context: another context of the same browser stays native."""

    async def go() -> tuple[str, str]:
        async with launched(stealth_pool=True) as browser:
            host = await stealth.probe_host(browser)
            fp = stealth.Fingerprint.generate("iso", chrome_version=host.chrome_version, host=host)
            await stealth_context(browser, fp, host)
            other = await browser.new_context()
            page = await other.new_page()
            await stealth.ready(page)  # no-op without stealth
            await page.goto(detector_server.base_url + "/frame?tag=iso")
            return await page.evaluate(
                "() => { const gl = document.createElement('canvas').getContext('webgl');"
                " return gl.getParameter(gl.getExtension('WEBGL_debug_renderer_info').UNMASKED_RENDERER_WEBGL); }"
            ), fp.webgl_renderer

    native, spoofed = run(go)
    assert native != spoofed and "SwiftShader" in native
