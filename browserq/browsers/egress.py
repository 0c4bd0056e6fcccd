"""allowed_domains' page-side half: what the browser-level ``Fetch`` session never sees.

:mod:`browserq.browsers.domains` pauses documents (every request in strict mode) and
``route_web_socket`` holds WebSockets. Three things talk to hosts past both, and ``egress.js``
stops them in every frame of a guarded context:

* **speculation rules** (both modes) — Chromium fetches cross-site prefetches and prerenders in
  an isolated network context no DevTools interception reaches (launch flags did not stop them
  in Chromium 156: ``Prerender2``, ``PreloadingConfig`` holdbacks and ``Page.setPrerenderingAllowed``
  were tried). Inline rule sets are removed on insertion, before Blink passes their candidates to
  the browser; the ``Speculation-Rules`` response header is stripped by the guard.
* **WebRTC** (strict) — STUN/TURN over UDP and TCP and ICE checks to any candidate a page adds:
  peer connections may use only TURN servers on allowed hosts, with ``iceTransportPolicy: relay``
  so nothing is gathered or checked directly.
* **WebTransport, WebSocketStream, WebSocket in workers** (strict) — QUIC over UDP, and
  WebSockets where Playwright's ``route_web_socket`` does not reach: a foreign host throws
  ``NotAllowedError``. Workers run no init scripts, and priming them through an auto-attached
  CDP session loses the race against Playwright's own resume for a worker that runs at once. So
  the file runs first in every worker by construction: a worker started from a URL gets it
  prepended to its script by the browser's worker-script watch (``stealth.workers``), one from a
  ``blob:`` or ``data:`` URL is rebuilt with it by the page-side ``Worker``/``SharedWorker``.

Per context, so runs without allowed_domains — and stealth detectors there — see untouched APIs.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from importlib import resources
from typing import TYPE_CHECKING

from browserq.guards import normalize_host
from browserq.stealth.workers import worker_scripts

if TYPE_CHECKING:  # pragma: no cover
    from playwright.async_api import BrowserContext


def egress_script(allowed_domains: Sequence[str], *, strict: bool) -> str:
    """``egress.js`` configured (domains normalised as the guard compares them)."""
    hosts = sorted({normalize_host(d) for d in allowed_domains if normalize_host(d)})
    source = resources.files("browserq.browsers").joinpath("egress.js").read_text(encoding="utf-8")
    return source.replace("__BROWSERQ_EGRESS__", json.dumps({"allowed": hosts, "strict": strict}))


async def confine_page_apis(
    context: BrowserContext, context_id: str, allowed_domains: Sequence[str], *, strict: bool
) -> None:
    """Install the page-side guard in every frame ``context`` opens from now on (and, in strict
    mode, in every worker its pages start)."""
    script = egress_script(allowed_domains, strict=strict)
    await context.add_init_script(script=script)
    if strict and context.browser is not None:
        await _prepend_to_worker_scripts(context, context_id, script)


async def _prepend_to_worker_scripts(context: BrowserContext, context_id: str, script: str) -> None:
    """Have the browser's worker-script watch put ``script`` first in this context's workers.

    The watch holds one script per context (stealth's identity, when stealth is on, is already
    there: it is registered when the context's first page opens, before the guard).
    """
    assert context.browser is not None
    watch = await worker_scripts(context.browser)
    watch.scripts[context_id] = script + "\n" + watch.scripts.get(context_id, "")
    context.on("close", lambda _context: watch.forget(context_id))
