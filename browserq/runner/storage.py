"""The run's browser storage for a checkpoint, read as cheaply as a resume allows.

A resumed run gets a fresh context made from the checkpoint's storage (Playwright's
``storage_state`` format), so a checkpoint needs the cookies and the localStorage and IndexedDB
of every origin the run used. ``context.storage_state(indexed_db=True)`` reads all of it the
heavy way: it injects Playwright's storage script into every page, serialises every IndexedDB
database, and opens a page for each origin the context visited that no page shows now. Most
checkpoints need much less, so :class:`StorageReader` reads:

* cookies through ``context.cookies()`` (the browser's cookie jar, no page involved), after the
  evaluate below and checked against the page's ``document.cookie`` it returned (a cookie a
  script just wrote reaches the jar a moment later);
* the current page's origin with one small evaluate that returns its localStorage items and the
  number of its IndexedDB databases — only when it has some does the full ``storage_state`` run
  (its IndexedDB serialiser is Playwright's; browserq does not write its own);
* every other origin as the previous capture (or the storage the context was made with) had it:
  no page of theirs loaded since, so nothing of theirs could change. When one did (a popup, an
  iframe, an earlier page of another origin since the last capture), the full ``storage_state``
  runs instead; so does a page with a frame of another origin now (it may write at any time).

sessionStorage is not kept, as before (``storage_state`` has no place for it).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from typing import Any
from urllib.parse import urlsplit

from playwright.async_api import BrowserContext, Frame, Page

#: How often the cookie jar is read while it lags behind ``document.cookie``, and the wait between.
COOKIE_READS = 5
COOKIE_SETTLE_S = 0.02

#: One round trip: the origin, its cookies as the page sees them, its localStorage items, and how many IndexedDB databases it has
#: (-1 when that cannot be told; then the full storage_state decides).
_READ_ORIGIN = """async () => {
  const out = {origin: location.origin, local: [], idb: 0, cookie: ""};
  try { out.cookie = document.cookie; } catch (e) {}
  try {
    for (let i = 0; i < localStorage.length; i++) {
      const name = localStorage.key(i);
      out.local.push({name, value: localStorage.getItem(name)});
    }
  } catch (e) { out.local = null; }
  try {
    out.idb = indexedDB && indexedDB.databases ? (await indexedDB.databases()).length : -1;
  } catch (e) { out.idb = -1; }
  return out;
}"""


def origin_of(url: str) -> str | None:
    """``http(s)://host[:port]`` of a URL, None for pages without storage of their own."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return None
    return f"{parts.scheme}://{parts.netloc.rsplit('@', 1)[-1]}"


def digest(value: Any) -> str:
    """A stable fingerprint of JSON data: tells an unchanged storage or checkpoint apart."""
    encoded = json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(encoded.encode()).hexdigest()


class StorageReader:
    """Watches which origins the context's pages load; reads storage for a checkpoint.

    ``initial``: the storage the context was made with (a checkpoint's or an identity's)."""

    def __init__(self, context: BrowserContext, initial: dict[str, Any] | None = None) -> None:
        self.context = context
        self.previous: list[dict[str, Any]] = list((initial or {}).get("origins") or [])
        self.visited: set[str] = set()  # origins a frame navigated to since the last capture
        self.full_reads = 0  # how often the full storage_state was needed (tests, bench)
        self.cheap_reads = 0
        context.on("page", self.watch)
        for page in context.pages:
            self.watch(page)

    def watch(self, page: Page) -> None:
        """Note every origin any frame of ``page`` navigates to (events the driver sends anyway)."""
        page.on("framenavigated", self._navigated)

    def _navigated(self, frame: Frame) -> None:
        origin = origin_of(frame.url)
        if origin is not None:
            self.visited.add(origin)

    async def read(self, page: Page) -> dict[str, Any]:
        """The context's storage in ``storage_state`` form (cookies, origins with their storage)."""
        current = origin_of(page.url)
        seen = set(self.visited)
        framed = {origin_of(frame.url) for frame in page.frames} - {None}  # known here, no round trip
        if (seen | framed) - {current} or len(self.context.pages) != 1:  # storage this page cannot read
            return await self._full(seen)
        found: dict[str, Any] | None = None
        if current is None:  # about:blank, data: — no origin storage to read
            cookies = await self.context.cookies()
        else:
            found = await page.evaluate(_READ_ORIGIN)
            if found["idb"] != 0 or found["local"] is None or found["origin"] != current:
                return await self._full(seen)
            cookies = await self._cookies_seen_by(found["cookie"])
        self.cheap_reads += 1
        origins = [o for o in self.previous if o.get("origin") != current]
        if found is not None and found["local"]:
            origins.append({"origin": current, "localStorage": found["local"], "indexedDB": []})
        self.previous, self.visited = origins, self.visited - seen
        return {"cookies": cookies, "origins": origins}

    async def _cookies_seen_by(self, document_cookie: str) -> list[Any]:
        """The cookie jar, once it holds what the page's ``document.cookie`` showed: a cookie a
        script just wrote reaches the browser's jar a moment after the page sees it."""
        shown = {tuple(part.strip().split("=", 1)) for part in document_cookie.split(";") if "=" in part}
        cookies: list[Any] = []
        for _ in range(COOKIE_READS):
            cookies = await self.context.cookies()
            if shown <= {(c["name"], c["value"]) for c in cookies}:
                break
            await asyncio.sleep(COOKIE_SETTLE_S)
        return cookies

    async def _full(self, seen: set[str]) -> dict[str, Any]:
        """Playwright's own reading of everything (what every checkpoint did before)."""
        self.full_reads += 1
        storage = await self.context.storage_state(indexed_db=True)
        self.previous, self.visited = [dict(o) for o in storage.get("origins") or []], self.visited - seen
        return dict(storage)

    async def read_within(self, page: Page, timeout_s: float) -> dict[str, Any]:
        """:meth:`read`, bounded: a busy page must not hold the run here."""
        return await asyncio.wait_for(self.read(page), timeout_s)
