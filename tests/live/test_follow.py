"""The live view's ``POST /live/<id>/next``: what a page whose worker died asks any live view.

It answers only a JSON follow request from its own origin, from the store (here a stub that
records what it was asked), and says "here" only to a page it gave that secret to itself.
"""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp

from browserq.live.server import LiveViewServer
from browserq.live.session import Follow


def test_next_answers_a_follow_request_of_its_own_origin_only() -> None:
    asked: list[tuple[str, int]] = []

    async def mint(_run_id: str, _handoff_id: int) -> str:
        return "minted"

    async def answer(secret: str, handoff_id: int) -> dict[str, Any]:
        asked.append((secret, handoff_id))
        return {"state": "waiting", "url": None, "status": None}

    async def go() -> list[Any]:
        server = LiveViewServer("127.0.0.1", 0, follow=Follow(mint=mint, answer=answer))
        base = await server.start()
        seen: list[Any] = []
        try:
            async with aiohttp.ClientSession() as http:
                async with http.post(f"{base}/live/7/next", json={"follow": "s3cret"}) as r:
                    seen.append((r.status, await r.json(), r.headers.get("Cache-Control")))
                async with http.post(f"{base}/live/7/next", json={"follow": "s3cret"},
                                     headers={"Origin": "http://evil.example"}) as r:
                    seen.append(r.status)
                for body in ("not json", '{"follow": 3}', '{"other": "x"}', "x" * 5000):
                    async with http.post(f"{base}/live/7/next", data=body) as r:
                        seen.append(r.status)
                async with http.get(f"{base}/live/7/next") as r:
                    seen.append(r.status)
        finally:
            await server.stop()
        return seen

    first, cross, *bad, get = asyncio.run(go())
    assert first == (200, {"state": "waiting", "url": None, "status": None}, "no-store")
    assert cross == 403
    assert bad == [400, 400, 400, 400] and get == 405
    assert asked == [("s3cret", 7)]  # only the good request reached the store
