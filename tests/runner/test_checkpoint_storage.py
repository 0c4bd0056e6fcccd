"""The checkpoint's storage read cheaply (cookies + one evaluate) gives a fresh context what
Playwright's full ``storage_state(indexed_db=True)`` gave it; IndexedDB data and other origins
still go the full way. Real Chromium against the demo site; the reads are counted."""

from __future__ import annotations

import asyncio
from typing import Any

from playwright.async_api import BrowserContext

from browserq.browsers.api import async_playwright
from browserq.runner.storage import StorageReader
from browserq.settings import load_settings

WRITE_LOCAL = "() => { localStorage.setItem('k', 'v1'); document.cookie = 'c=1; path=/; max-age=3600'; }"
WRITE_IDB = """async () => new Promise((resolve, reject) => {
  const req = indexedDB.open('cpdb', 1);
  req.onupgradeneeded = () => req.result.createObjectStore('kv');
  req.onsuccess = () => {
    const tx = req.result.transaction('kv', 'readwrite');
    tx.objectStore('kv').put('stored', 'x');
    tx.oncomplete = () => { req.result.close(); resolve(true); };
    tx.onerror = () => reject(tx.error);
  };
  req.onerror = () => reject(req.error);
})"""
READ_BACK = """async () => {
  const dbs = (await indexedDB.databases()).map(d => d.name);
  let value = null;
  if (dbs.includes('cpdb')) {
    value = await new Promise((resolve) => {
      const req = indexedDB.open('cpdb', 1);
      req.onsuccess = () => {
        const get = req.result.transaction('kv').objectStore('kv').get('x');
        get.onsuccess = () => resolve(get.result);
      };
    });
  }
  return {local: localStorage.getItem('k'), other: localStorage.getItem('o'), cookie: document.cookie, dbs, value};
}"""


def _origins(storage: dict[str, Any]) -> dict[str, Any]:
    return {o["origin"]: sorted((i["name"], i["value"]) for i in o.get("localStorage", [])) for o in storage["origins"]}


async def _read_back(context: BrowserContext, url: str) -> dict[str, Any]:
    page = await context.new_page()
    await page.goto(url)
    return await page.evaluate(READ_BACK)


def _with_browser(scenario: Any) -> Any:
    settings = load_settings()

    async def main() -> Any:
        async with async_playwright() as pw:
            browser = await pw.chromium.launch(
                executable_path=settings.resolve_chromium(), args=settings.chromium_launch_args(),
                chromium_sandbox=settings.chromium_sandbox,
            )
            try:
                return await scenario(browser)
            finally:
                await browser.close()

    return asyncio.run(main())


def test_localstorage_and_cookies_are_read_without_the_full_storage_state(demo) -> None:
    url = f"{demo.url}/storage"

    async def scenario(browser: Any) -> None:
        context = await browser.new_context()
        page = await context.new_page()
        reader = StorageReader(context)
        await page.goto(url)
        nothing = await reader.read(page)
        assert nothing["origins"] == [] and (reader.cheap_reads, reader.full_reads) == (1, 0)
        await page.evaluate(WRITE_LOCAL)
        cheap = await reader.read(page)
        full = await context.storage_state(indexed_db=True)
        assert (reader.cheap_reads, reader.full_reads) == (2, 0)
        assert cheap["cookies"] == full["cookies"] and _origins(cheap) == _origins(full)
        restored = await browser.new_context(storage_state=cheap)
        seen = await _read_back(restored, url)
        assert (seen["local"], seen["cookie"], seen["dbs"]) == ("v1", "c=1", [])
        await restored.close()
        await context.close()

    _with_browser(scenario)


def test_indexeddb_and_other_origins_take_the_full_read_and_are_restored(demo) -> None:
    url = f"{demo.url}/storage"
    other = url.replace("127.0.0.1", "localhost")  # another origin on the same server

    async def scenario(browser: Any) -> None:
        context = await browser.new_context()
        page = await context.new_page()
        reader = StorageReader(context)
        await page.goto(url)
        await page.evaluate(WRITE_LOCAL)
        await page.evaluate(WRITE_IDB)
        with_idb = await reader.read(page)
        assert (reader.cheap_reads, reader.full_reads) == (0, 1)  # the page has IndexedDB data
        restored = await browser.new_context(storage_state=with_idb)
        seen = await _read_back(restored, url)
        assert (seen["local"], seen["cookie"], seen["dbs"], seen["value"]) == ("v1", "c=1", ["cpdb"], "stored")
        await restored.close()

        await page.evaluate("async () => { await new Promise(r => { const d = indexedDB.deleteDatabase('cpdb');"
                            " d.onsuccess = d.onerror = r; }); }")
        await page.goto(other)
        await page.evaluate("() => localStorage.setItem('o', 'there')")
        await page.goto(url)
        mixed = await reader.read(page)  # localhost was loaded since the last read: the full way
        assert (reader.cheap_reads, reader.full_reads) == (0, 2)
        assert _origins(mixed) == _origins(await context.storage_state(indexed_db=True))
        again = await reader.read(page)  # nothing else loaded since: cheap, localhost kept as read
        assert (reader.cheap_reads, reader.full_reads) == (1, 2)
        assert _origins(again) == _origins(mixed)
        restored = await browser.new_context(storage_state=again)
        assert (await _read_back(restored, other))["other"] == "there"
        assert (await _read_back(restored, url))["dbs"] == []
        await restored.close()

        # A frame of another origin on the page may write its storage at any time: the full way,
        # also at the next read when nothing navigated in between.
        await page.evaluate("src => new Promise(r => { const f = document.createElement('iframe');"
                            " f.onload = r; f.src = src; document.body.append(f); })", other)
        await reader.read(page)
        framed = await reader.read(page)
        assert (reader.cheap_reads, reader.full_reads) == (1, 4)
        assert _origins(framed) == _origins(await context.storage_state(indexed_db=True))
        await context.close()

    _with_browser(scenario)
