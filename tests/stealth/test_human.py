"""Human-like input against a page that records what a behavioural script would see."""

from __future__ import annotations

import itertools
import math
import random
import statistics
from typing import Any

import pytest

from browserq.stealth import human
from tests.stealth.conftest import launched, run

pytestmark = pytest.mark.timeout(120)

RECORDER = """<!doctype html><html><body style="margin:0">
<button id="go" style="position:absolute; left:700px; top:420px; width:120px; height:40px">Go</button>
<input id="name" style="position:absolute; left:100px; top:80px; width:300px">
<script>
window.rec = {moves: [], clicks: [], keys: []};
document.addEventListener('mousemove', e => rec.moves.push([e.clientX, e.clientY, e.timeStamp]));
document.getElementById('go').addEventListener('click', e => rec.clicks.push([e.clientX, e.clientY, e.isTrusted, e.detail]));
document.getElementById('name').addEventListener('keydown', e => rec.keys.push([e.key, e.timeStamp, e.isTrusted]));
</script></body></html>"""


def test_mouse_path_is_curved_eased_and_deterministic() -> None:
    a = human.mouse_path((10, 10), (610, 410), random.Random(7))
    assert a == human.mouse_path((10, 10), (610, 410), random.Random(7))
    assert a != human.mouse_path((10, 10), (610, 410), random.Random(8))
    assert len(a) >= 40 and a[-1] == (610, 410)
    # Bows away from the straight line...
    deviation = max(abs((x - 10) * 400 - (y - 10) * 600) / math.hypot(600, 400) for x, y in a)
    assert deviation > 20
    # ...and eases: short steps at both ends, long ones in the middle.
    steps = [math.dist(p, q) for p, q in zip([(10.0, 10.0), *a], a, strict=False)]
    middle = steps[len(steps) // 3 : 2 * len(steps) // 3]
    assert statistics.mean(middle) > 3 * statistics.mean(steps[:3] + steps[-3:])


def test_move_and_click_and_typing_on_a_recording_page() -> None:
    async def go() -> dict[str, Any]:
        async with launched() as browser:
            page = await browser.new_page()
            await page.set_content(RECORDER)
            rng = random.Random(42)
            await human.move_and_click(page, page.locator("#go"), rng)
            await human.type_like_human(page.locator("#name"), "Ada Lovelace, hi", rng)
            await human.pause(rng, 50)
            return {
                "rec": await page.evaluate("rec"),
                "value": await page.locator("#name").input_value(),
            }

    out = run(go)
    moves, clicks, keys = out["rec"]["moves"], out["rec"]["clicks"], out["rec"]["keys"]
    assert len(clicks) == 1 and clicks[0][2] is True
    cx, cy = clicks[0][:2]
    assert 700 <= cx <= 820 and 420 <= cy <= 460
    assert (cx, cy) != (760, 440)  # not the exact centre Playwright's click() would use
    assert len(moves) >= 20, "many intermediate mouse points"
    assert len({(round(x), round(y)) for x, y, _ in moves}) >= 20
    assert moves[-1][2] - moves[0][2] > 150, "the move takes human time"
    # Typing: real key events, uneven intervals.
    assert out["value"] == "Ada Lovelace, hi"
    assert [k[0] for k in keys] == list("Ada Lovelace, hi") and all(k[2] for k in keys)
    intervals = [b[1] - a[1] for a, b in itertools.pairwise(keys)]
    assert min(intervals) > 10
    assert statistics.pstdev(intervals) > 15
    assert len({round(i) for i in intervals}) > len(intervals) // 2


def test_typing_delays_are_deterministic(monkeypatch: pytest.MonkeyPatch) -> None:
    sleeps: list[float] = []

    async def fake_sleep(seconds: float) -> None:
        sleeps.append(seconds)

    class Keyboard:
        async def type(self, text: str) -> None:
            pass

    class Locator:
        page = type("P", (), {"keyboard": Keyboard()})()

        async def focus(self) -> None:
            pass

    monkeypatch.setattr(human.asyncio, "sleep", fake_sleep)
    run(lambda: human.type_like_human(Locator(), "hello world", random.Random(3)))  # type: ignore[arg-type]
    first, sleeps[:] = list(sleeps), []
    run(lambda: human.type_like_human(Locator(), "hello world", random.Random(3)))  # type: ignore[arg-type]
    assert sleeps == first and len(first) == len("hello world")
    assert len(set(first)) == len(first)
