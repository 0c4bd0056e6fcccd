"""A small site whose text, console and URLs carry markup meant to run in whoever shows them."""

from __future__ import annotations

import base64

from tests.support.http import html_pages

#: If the report ever ran this, ``window.__pwned`` would be set (and the title changed).
PAYLOAD = "<script>window.__pwned = 1; document.title = 'pwned'</script>"
#: An attribute-breaking payload for the error message and URLs.
IMG_PAYLOAD = '"><img src=x onerror="window.__pwned=2">'

_HEAD = '<head><meta charset="utf-8"><link rel="icon" href="data:,"><title>Hostile quotes</title></head>'
_STYLE = ("<style>body{font:16px system-ui;margin:40px;background:#fffbea}"
          ".quote{border-left:4px solid #e0a100;padding:8px 14px;margin:12px 0;background:#fff}</style>")


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


PAGES: dict[str, str] = {
    # The quotes' text holds the payload as text: extracted, it is `<script>…</script>` verbatim.
    "/quotes": (
        f"<!DOCTYPE html><html>{_HEAD}<body>{_STYLE}<h1>Quotes</h1>"
        f'<div class="quote"><span class="text">{_escape(PAYLOAD)}</span> — <b class="author">Mallory</b></div>'
        f'<div class="quote"><span class="text">{_escape(IMG_PAYLOAD)}</span> — <b class="author">Eve</b></div>'
        '<div class="quote"><span class="text">Plain words are fine.</span> — <b class="author">Alice</b></div>'
        # Inside a <script>, "</script>" would end it: the page decodes the payloads instead.
        "<script>console.log(atob('" + _b64(PAYLOAD) + "'));"
        "console.warn('careful: ' + atob('" + _b64(IMG_PAYLOAD) + "'));"
        "fetch('/missing?q=' + encodeURIComponent(atob('" + _b64(PAYLOAD) + "'))).catch(() => {});</script>"
        "</body></html>"
    ),
}


HostilePages = html_pages(PAGES)
