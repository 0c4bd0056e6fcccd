"""Every download of a run's context, bounded while its bytes arrive.

Chromium writes a download into Playwright's temporary folder as ``<file>.crdownload`` and
renames it when it is complete. :class:`DownloadWatch` sees every download the context starts —
a ``download`` step's, or one a page starts by itself (a click, a script, a popup, an iframe) —
measures that file every :data:`POLL_S`, and cancels the download (Chromium deletes the partial
file) as soon as it passes ``BROWSERQ_MAX_DOWNLOAD_BYTES``, or as soon as the run's downloads
(those kept so far plus those in flight, oldest first) pass ``BROWSERQ_MAX_RUN_DOWNLOAD_BYTES``.
So the disk holds at most about one poll's worth of bytes past a limit, and an endless stream
ends at the limit, not at the step's timeout.

A ``download`` step *claims* the next download of its page (:meth:`DownloadWatch.expect`) and
gets its file or its refusal (``DOWNLOAD_TOO_LARGE``). A download no step claimed is deleted as
soon as it ends; one that a limit cut short leaves a run warning ``DOWNLOAD_TOO_LARGE``.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import structlog
from playwright.async_api import BrowserContext, Download, Page, Response

from browserq.actions.files import RunFiles
from browserq.browsers.api import Error as PlaywrightError
from browserq.browsers.errors import first_line
from browserq.errors import Codes, StepFailed

log = structlog.get_logger(__name__)

#: How often the files of downloads in flight are measured: what passes a limit is at most what
#: arrives in this time (plus the cancel's round trip).
POLL_S = 0.005
#: How many over-limit Content-Length announcements a run remembers (a download starts just after its response).
DECLARED_KEPT = 256
#: Chromium's suffix for a download in progress (renamed away when it completes).
PARTIAL_SUFFIX = ".crdownload"


@dataclass(eq=False)
class Watched:
    """One download of the context: its file, its size on disk, why it was refused, its end."""

    item: Download
    temp: Path | None  # where Chromium writes it (None: not known, then only its end is measured)
    claimed: bool
    size: int = 0
    refused: StepFailed | None = None
    finished: asyncio.Future[Path] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )


def temp_path(item: Download) -> Path | None:
    """The file Playwright had Chromium write ``item`` to (Playwright keeps it on its artifact)."""
    try:
        return Path(item._impl_obj._artifact._initializer["absolutePath"])
    except (AttributeError, KeyError, TypeError):
        return None


def size_on_disk(temp: Path | None) -> int:
    """Bytes of the download written so far: the partial file, else the finished one."""
    if temp is None:
        return 0
    for candidate in (temp.with_name(temp.name + PARTIAL_SUFFIX), temp):
        with contextlib.suppress(OSError):
            return candidate.stat().st_size
    return 0


def too_large(files: RunFiles, size: int, in_flight_before: int = 0) -> StepFailed | None:
    """DOWNLOAD_TOO_LARGE when ``size`` passes the per-download limit, or when it takes the run's
    downloads (kept ones, then ``in_flight_before`` of older downloads in flight) past the run's."""
    if size > files.max_download_bytes:
        return StepFailed(
            Codes.DOWNLOAD_TOO_LARGE,
            f"the download passed {files.max_download_bytes:,} bytes (BROWSERQ_MAX_DOWNLOAD_BYTES; "
            f"{size:,} bytes written or announced when it was stopped); it was not kept",
        )
    total = files.downloaded + in_flight_before + size
    if total > files.max_run_download_bytes:
        return StepFailed(
            Codes.DOWNLOAD_TOO_LARGE,
            f"the download ({size:,} bytes when it was stopped) takes the run's downloads to {total:,} "
            f"bytes, over the limit of {files.max_run_download_bytes:,} (BROWSERQ_MAX_RUN_DOWNLOAD_BYTES)",
        )
    return None


def _retrieved(future: asyncio.Future[Any]) -> None:
    if not future.cancelled():
        future.exception()


async def discard(item: Download) -> None:
    """Stop the download if it still runs, and delete its file (cancel first: delete waits for the end)."""
    with contextlib.suppress(PlaywrightError):
        await item.cancel()
        await item.delete()


class DownloadWatch:
    """Bounds every download of one context while it arrives; hands claimed ones to their step.

    ``warn(code, message)`` records a run warning (a download no step claimed was cut short)."""

    def __init__(
        self, context: BrowserContext, files: RunFiles, warn: Callable[[str, str], None]
    ) -> None:
        self.files = files
        self._warn = warn
        self._claims: list[tuple[Page, asyncio.Future[Watched]]] = []
        self.active: list[Watched] = []  # in the order they started
        self._tasks: set[asyncio.Task[Any]] = set()
        self._poller: asyncio.Task[None] | None = None
        self._declared: dict[str, int] = {}  # URLs whose Content-Length alone passes the limit
        context.on("download", self._started)
        context.on("response", self._response)

    def expect(self, page: Page) -> asyncio.Future[Watched]:
        """The next download ``page`` starts (the step then owns its file)."""
        claim: asyncio.Future[Watched] = asyncio.get_running_loop().create_future()
        self._claims.append((page, claim))
        return claim

    def forget(self, claim: asyncio.Future[Watched]) -> None:
        """The step no longer waits for a download (it timed out or failed)."""
        self._claims = [(p, c) for p, c in self._claims if c is not claim]

    def close(self) -> None:
        """Stop measuring (the context closes; Playwright ends its downloads then)."""
        for task in [*self._tasks, *([self._poller] if self._poller else [])]:
            task.cancel()

    def refused_unstarted(self, url: str, size: int) -> None:
        """A document stopped past a limit before Chromium made it a download (under a driver that
        reads documents whole, :mod:`browserq.browsers.document_bodies`): the step waiting for the
        next download fails ``DOWNLOAD_TOO_LARGE``; with none waiting it is a run warning."""
        refusal = too_large(self.files, max(size, self.files.max_download_bytes + 1))  # past it, by definition
        assert refusal is not None
        claim = next((c for _, c in self._claims if not c.done()), None)
        if claim is not None:
            self.forget(claim)
            claim.set_exception(refusal)
            return
        self._warn(Codes.DOWNLOAD_TOO_LARGE.code, f"a download the page started was stopped: {refusal.message}")

    def _response(self, response: Response) -> None:
        """A response that announces more than one download may hold: refused before it is written."""
        with contextlib.suppress(ValueError):
            declared = int(response.headers.get("content-length") or 0)
            if declared > self.files.max_download_bytes and len(self._declared) < DECLARED_KEPT:
                self._declared[response.url] = declared

    def _started(self, item: Download) -> None:
        claim = next((c for p, c in self._claims if p == item.page and not c.done()), None)
        watched = Watched(item, temp_path(item), claimed=claim is not None)
        if watched.temp is None:
            log.warning(
                "download file unknown: its size is checked only when it ends", url=item.url[:200]
            )
        self.active.append(watched)
        self._spawn(self._follow(watched))
        if claim is not None:
            watched.finished.add_done_callback(_retrieved)  # a step that gave up must not log it
            self.forget(claim)
            claim.set_result(watched)
        if self._poller is None or self._poller.done():
            self._poller = asyncio.get_running_loop().create_task(self._poll())

    def _spawn(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _poll(self) -> None:
        """Measure every download in flight; stop those a limit refuses."""
        while self.active:
            before = 0
            for watched in list(self.active):
                if watched.refused is not None:
                    continue
                watched.size = size_on_disk(watched.temp)
                declared = self._declared.get(watched.item.url, 0)
                refusal = too_large(self.files, max(watched.size, declared), before)
                if refusal is None:
                    before += watched.size
                else:
                    self._refuse(watched, refusal)
            await asyncio.sleep(POLL_S)

    def _refuse(self, watched: Watched, refusal: StepFailed) -> None:
        watched.refused = refusal
        log.info("download stopped at a limit", url=watched.item.url[:200], bytes=watched.size)
        self._spawn(discard(watched.item))
        if not watched.claimed:
            self._warn(
                Codes.DOWNLOAD_TOO_LARGE.code,
                f"a download the page started was stopped: {refusal.message}",
            )

    async def _follow(self, watched: Watched) -> None:
        """Wait for the download's end; a stray's file is deleted at once, a claimed one's handed on."""
        try:
            path = Path(await watched.item.path())
        except PlaywrightError as exc:
            failure = watched.refused or StepFailed(
                Codes.DOWNLOAD_FAILED, f"the download failed: {first_line(exc)}"
            )
            self._end(watched, failure=failure)
        else:
            watched.size = size_on_disk(path)
            if (
                watched.refused is None
                and (refusal := too_large(self.files, watched.size)) is not None
            ):
                self._refuse(watched, refusal)  # it finished between two measurements
            self._end(watched, path=path, failure=watched.refused)
            if not watched.claimed and watched.refused is None:
                await discard(watched.item)  # nothing the run asked for stays on disk
        finally:
            if watched in self.active:
                self.active.remove(watched)

    def _end(
        self, watched: Watched, *, path: Path | None = None, failure: StepFailed | None = None
    ) -> None:
        if not watched.claimed or watched.finished.done():
            return
        if failure is not None:
            watched.finished.set_exception(failure)
        else:
            assert path is not None
            watched.finished.set_result(path)
