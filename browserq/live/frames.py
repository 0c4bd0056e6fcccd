"""The frames a live view shows: one Chromium screencast per handoff, shared by its viewers.

Why a screencast: polling ``page.screenshot()`` costs a full capture of a still page every
interval and shows a change up to an interval late. Chromium's ``Page.startScreencast`` (through a
Playwright CDP session) pushes a JPEG when the page paints, at once, and nothing while it is
still. A cast belongs to one page, so there is one per handoff, not one per viewer: it starts with
the first viewer, moves when the run's current page changes (a tab), and stops — and its CDP
session detaches — with the last viewer or the handoff. A new viewer gets one screenshot at once,
since a still page would otherwise show nothing. Chromium drops, for good, a paint that comes
while three cast frames wait for their ack — and the cast holds acks to cap its frame rate — so
a burst of frames (less than :data:`SETTLE_S` apart) may end on a lost paint: once the page is
still again, the cast sends a screenshot (a lone paint costs none). Without a CDP session (a
browser that is not Chromium) the frames are screenshots every :data:`FRAME_INTERVAL_S` again.

Every frame message carries the page's CSS viewport as ``w``/``h`` (a cast frame may be at device
pixels or scaled down by ``maxWidth``): the page script maps a click by those, not by the image.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
from collections.abc import Callable
from typing import Any, Protocol

import structlog

log = structlog.get_logger(__name__)

QUALITY = 70
#: The largest frame cast (Chromium scales the page into it, keeping its shape): a person's
#: window shows no more, and an identity's 2560-pixel screen costs the encoder ~4x the pixels.
MAX_FRAME_WIDTH = 1280
#: At most this many frames a second (a person solving a captcha needs no more; a spinning
#: animation would otherwise cost the encoder 40+ frames a second).
MAX_FPS = 10
MIN_FRAME_INTERVAL_S = 1 / MAX_FPS
MAX_FRAME_HEIGHT = 1024
#: The fallback's polling interval, and how often a quiet cast looks whether the run's page moved.
FRAME_INTERVAL_S = 0.4
PAGE_CHECK_S = 0.5
#: Frames closer than this make a burst, and this long without a frame ends one (the page is
#: still): a burst's last paint may be lost, so its end is shown with a screenshot.
SETTLE_S = 0.3
#: The longest one frame may take to reach one viewer, and one CDP call to answer.
SEND_TIMEOUT_S = 5.0
CDP_TIMEOUT_S = 5.0
_VIEWPORT = "() => ({width: innerWidth, height: innerHeight})"


class Viewer(Protocol):
    """Where frames go (an aiohttp ``WebSocketResponse``)."""

    async def send_json(self, data: Any) -> None: ...


class Screencast:
    """The frames of one handoff's page, for all its viewers."""

    def __init__(self, page: Callable[[], Any]) -> None:
        self._page_of = page  # the run's current page (it may change: a tab)
        self._viewers: dict[Viewer, bool] = {}  # viewer → a frame reached it
        self._task: asyncio.Task[None] | None = None
        self.casting: Any = None  # the page a CDP screencast runs on now (None: none, or polling)
        self.starts = 0  # CDP screencasts started (one per page cast; tests, logs)

    @property
    def viewers(self) -> int:
        return len(self._viewers)

    async def add(self, viewer: Viewer) -> None:
        """A viewer joins: it gets a frame at once, and every later one."""
        self._viewers[viewer] = False
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._run(), name="browserq-live-frames")
        page = self._current()
        if page is None:
            return
        message = await _screenshot(page)
        if message is not None and self._viewers.get(viewer) is False:  # else a cast frame got there first
            await self._send(viewer, message)

    async def remove(self, viewer: Viewer) -> None:
        """A viewer leaves; the last one stops the cast."""
        self._viewers.pop(viewer, None)
        if not self._viewers:
            await self.stop()

    async def stop(self) -> None:
        """No more frames for anyone: the cast stops and its CDP session detaches."""
        self._viewers.clear()
        task, self._task = self._task, None
        if task is not None and not task.done():
            task.cancel()
            await asyncio.wait([task])  # its cleanup ran (our own cancellation still propagates)

    def _current(self) -> Any:
        """The run's current page; None while it has none (crashed, or closed)."""
        try:
            return self._page_of()
        except Exception:
            return None

    # --- producing frames --------------------------------------------------------------------------
    async def _run(self) -> None:
        while self._viewers:
            page = self._current()
            try:
                if page is None or page.is_closed():
                    await asyncio.sleep(PAGE_CHECK_S)
                    continue
                cdp = await self._cdp_session(page)
                if cdp is None:
                    await self._poll(page)
                else:
                    await self._cast(page, cdp)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # a page closing under us: look again shortly
                log.debug("live view frames interrupted", error=str(exc)[:200])
                await asyncio.sleep(PAGE_CHECK_S)

    async def _cdp_session(self, page: Any) -> Any:
        try:
            return await page.context.new_cdp_session(page)
        except Exception as exc:
            if page.is_closed():
                raise
            log.debug("no CDP session for the live view: polling screenshots instead",
                      error=str(exc)[:200])
            return None

    async def _cast(self, page: Any, cdp: Any) -> None:
        """Cast ``page`` until it is no longer the run's page (or nobody watches)."""
        frames: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        cdp.on("Page.screencastFrame", frames.put_nowait)
        try:
            size = page.viewport_size or await page.evaluate(_VIEWPORT)
            await asyncio.wait_for(cdp.send("Page.startScreencast", {
                "format": "jpeg", "quality": QUALITY, "maxWidth": min(int(size["width"]), MAX_FRAME_WIDTH),
                "maxHeight": min(int(size["height"]), MAX_FRAME_HEIGHT), "everyNthFrame": 1,
            }), CDP_TIMEOUT_S)
            self.casting, self.starts = page, self.starts + 1
            log.debug("live view screencast started", url=page.url[:200], viewers=len(self._viewers))
            loop = asyncio.get_running_loop()
            last = -SETTLE_S  # when the last frame came
            burst = False  # frames came less than SETTLE_S apart since the last settle screenshot
            while self._viewers and self._current() is page and not page.is_closed():
                try:
                    frame = await asyncio.wait_for(frames.get(), SETTLE_S if burst else PAGE_CHECK_S)
                except TimeoutError:
                    if burst:  # the page went still after a burst: show where it ended
                        burst = False
                        await self._broadcast_screenshot(page)
                    continue
                if self._current() is not page:
                    break
                sent = loop.time()
                burst = burst or sent - last < SETTLE_S
                last = sent
                meta = frame.get("metadata") or {}
                await self._broadcast(_frame(frame["data"], meta.get("deviceWidth"),
                                             meta.get("deviceHeight")))
                # acked once sent and not before MIN_FRAME_INTERVAL_S: Chromium sends (and encodes)
                # the next frame only then, so an animation costs at most MAX_FPS frames a second.
                # But Chromium drops, for good, a paint that comes while three frames are captured
                # and not acked (kMaxScreencastFramesInFlight = 2, page_handler.cc), and those
                # being encoded are not seen here: a burst's last paint may be lost, so a burst
                # ends with a screenshot (above)
                await asyncio.sleep(max(0.0, sent + MIN_FRAME_INTERVAL_S - loop.time()))
                await asyncio.wait_for(cdp.send("Page.screencastFrameAck",
                                                {"sessionId": frame["sessionId"]}), CDP_TIMEOUT_S)
        finally:
            self.casting = None
            with contextlib.suppress(Exception):
                await asyncio.wait_for(cdp.send("Page.stopScreencast"), CDP_TIMEOUT_S)
            with contextlib.suppress(Exception):
                await asyncio.wait_for(cdp.detach(), CDP_TIMEOUT_S)

    async def _poll(self, page: Any) -> None:
        """The fallback: a screenshot every interval while ``page`` is the run's page."""
        while self._viewers and self._current() is page and not page.is_closed():
            await self._broadcast_screenshot(page)
            await asyncio.sleep(FRAME_INTERVAL_S)

    async def _broadcast_screenshot(self, page: Any) -> None:
        message = await _screenshot(page)
        if message is not None:
            await self._broadcast(message)

    # --- sending -----------------------------------------------------------------------------------
    async def _broadcast(self, message: dict[str, Any]) -> None:
        await asyncio.gather(*(self._send(viewer, message) for viewer in list(self._viewers)))

    async def _send(self, viewer: Viewer, message: dict[str, Any]) -> None:
        try:
            await asyncio.wait_for(viewer.send_json(message), SEND_TIMEOUT_S)
        except Exception as exc:  # a viewer gone or stuck: the server's socket handler drops it
            log.debug("live view frame not sent", error=str(exc)[:200])
            return
        if viewer in self._viewers:
            self._viewers[viewer] = True


async def _screenshot(page: Any) -> dict[str, Any] | None:
    """A frame of ``page`` as it is now; None while it cannot be had (a page between documents:
    the next frame comes later)."""
    try:
        shot = await page.screenshot(type="jpeg", quality=QUALITY, scale="css", timeout=5000)
    except Exception as exc:  # a cancel is a BaseException: it passes
        log.debug("live view screenshot failed", error=str(exc)[:200])
        return None
    size = page.viewport_size or {}
    return _frame(base64.b64encode(shot).decode(), size.get("width"), size.get("height"))


def _frame(data: str, width: Any, height: Any) -> dict[str, Any]:
    """A frame message: base64 JPEG and, when known, the page's CSS viewport it shows."""
    message: dict[str, Any] = {"type": "frame", "data": data}
    if width and height:
        message["w"], message["h"] = round(float(width)), round(float(height))
    return message


__all__ = ["FRAME_INTERVAL_S", "Screencast", "Viewer"]
