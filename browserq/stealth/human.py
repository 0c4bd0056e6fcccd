"""Optional human-like input: curved mouse paths, uneven typing, pauses.

Playwright's ``click()`` teleports the pointer onto the element (one ``mousemove``, no path, often
the exact centre) and ``fill()`` sets the value with no key events at all; behavioural scripts
notice both. These helpers produce input a person could have produced — and are deterministic for
a seeded ``random.Random`` (same seed, same path and the same delays), so a run can be replayed.

They are slower by design (a click ~0.3-0.9 s, typing ~8 keys/s); use them where a site watches.
"""

from __future__ import annotations

import asyncio
import math
import random
import weakref
from typing import Literal

from playwright.async_api import Locator, Page

#: The buttons Playwright's mouse presses.
MouseButton = Literal["left", "middle", "right"]
# Playwright's mouse starts at (0, 0) on a new page and exposes no position: remember ours.
_positions: weakref.WeakKeyDictionary[Page, tuple[float, float]] = weakref.WeakKeyDictionary()


async def pause(rng: random.Random, base_ms: float) -> float:
    """Sleep around ``base_ms`` (log-normal, long tail to the right); returns the ms slept."""
    ms = max(0.0, base_ms * rng.lognormvariate(0.0, 0.35))
    await asyncio.sleep(ms / 1000)
    return ms


def _ease_in_out(t: float) -> float:
    return 4 * t**3 if t < 0.5 else 1 - (-2 * t + 2) ** 3 / 2


def mouse_path(
    start: tuple[float, float], end: tuple[float, float], rng: random.Random
) -> list[tuple[float, float]]:
    """Points of a curved path from ``start`` to ``end`` (excluded / included).

    A cubic Bézier whose control points bow to one side of the straight line, sampled with
    ease-in-out timing (dense at both ends, sparse in the middle — accelerate, then brake), with
    sub-pixel jitter on every point but the last. Longer moves get more points.
    """
    (x0, y0), (x3, y3) = start, end
    dx, dy = x3 - x0, y3 - y0
    dist = math.hypot(dx, dy)
    if dist < 1:
        return [end]
    nx, ny = -dy / dist, dx / dist  # unit normal
    bow = rng.uniform(0.08, 0.28) * dist * rng.choice((-1, 1))
    c1 = (x0 + dx * rng.uniform(0.2, 0.4) + nx * bow, y0 + dy * rng.uniform(0.2, 0.4) + ny * bow)
    c2 = (
        x0 + dx * rng.uniform(0.6, 0.8) + nx * bow * rng.uniform(0.3, 0.9),
        y0 + dy * rng.uniform(0.6, 0.8) + ny * bow * rng.uniform(0.3, 0.9),
    )
    steps = int(min(90, max(14, dist / rng.uniform(7, 12))))
    points = []
    for i in range(1, steps + 1):
        t = _ease_in_out(i / steps)
        u = 1 - t
        x = u**3 * x0 + 3 * u**2 * t * c1[0] + 3 * u * t**2 * c2[0] + t**3 * x3
        y = u**3 * y0 + 3 * u**2 * t * c1[1] + 3 * u * t**2 * c2[1] + t**3 * y3
        if i < steps:
            x += rng.gauss(0, 0.6)
            y += rng.gauss(0, 0.6)
        points.append((x, y))
    return points


async def move_to(page: Page, x: float, y: float, rng: random.Random) -> None:
    """Move the mouse from where it is to ``(x, y)`` along a curved path."""
    start = _positions.get(page, (0.0, 0.0))
    path = mouse_path(start, (x, y), rng)
    # Overshoot a long move a little, then correct — as hands do.
    if math.dist(start, (x, y)) > 300 and rng.random() < 0.35:
        over = (x + rng.uniform(-12, 12), y + rng.uniform(-8, 8))
        path = mouse_path(start, over, rng) + mouse_path(over, (x, y), rng)
    for px, py in path:
        await page.mouse.move(px, py)
        await asyncio.sleep(rng.uniform(0.004, 0.016))
    _positions[page] = (x, y)


async def move_and_click(
    page: Page, locator: Locator, rng: random.Random, *, button: MouseButton = "left"
) -> None:
    """Scroll ``locator`` into view, move there on a curved path, pause, and click it.

    The click lands at a random point of the element's box (biased to the middle, never on its
    edge), with a human press duration.
    """
    await locator.scroll_into_view_if_needed()
    box = await locator.bounding_box()
    if box is None:
        raise ValueError(f"{locator} has no bounding box (hidden or detached)")
    fx = min(0.85, max(0.15, rng.gauss(0.5, 0.15)))
    fy = min(0.8, max(0.2, rng.gauss(0.5, 0.12)))
    x, y = box["x"] + box["width"] * fx, box["y"] + box["height"] * fy
    await move_to(page, x, y, rng)
    await pause(rng, 90)
    await page.mouse.down(button=button)
    await asyncio.sleep(rng.uniform(0.05, 0.13))
    await page.mouse.up(button=button)


async def type_like_human(
    locator: Locator, text: str, rng: random.Random, *, wpm: float = 75
) -> None:
    """Focus ``locator`` and type ``text`` key by key with uneven delays.

    Delays are log-normal around the rate given by ``wpm`` (5 characters a word), faster inside
    a word than across a space, with an occasional longer pause (re-reading, thinking) after a
    space or punctuation. Every key sends real keydown/keypress/input/keyup events.
    """
    await locator.focus()
    keyboard = locator.page.keyboard
    base_ms = 60_000 / (wpm * 5)
    previous = ""
    for char in text:
        await keyboard.type(char)
        delay = base_ms * rng.lognormvariate(0.0, 0.4)
        if char == " " or previous == " ":
            delay *= 1.3
        if char in " .,;:!?" and rng.random() < 0.07:
            delay += rng.uniform(250, 900)
        previous = char
        await asyncio.sleep(delay / 1000)
