"""``download``: click something (or open a URL) and keep the file the page downloads.

The download must start and finish within the step's timeout. Playwright saves it in its own
temporary folder; its bytes are copied into the run's artifacts (kind ``download``, through the
journal: a directory or a bucket) and Playwright's copy is deleted at once, whatever happens.
The run's :class:`~browserq.actions.download_watch.DownloadWatch` measures it while it arrives:
one that passes ``BROWSERQ_MAX_DOWNLOAD_BYTES``, or takes the run's downloads over
``BROWSERQ_MAX_RUN_DOWNLOAD_BYTES``, is stopped there and fails ``DOWNLOAD_TOO_LARGE``.
"""

from __future__ import annotations

import asyncio
import mimetypes
import re
from pathlib import Path
from typing import Any, cast

from playwright.async_api import Response

from browserq.actions.context import StepContext
from browserq.actions.download_watch import DownloadWatch, Watched, discard, too_large
from browserq.actions.files import RunFiles, run_files
from browserq.actions.locate import first
from browserq.actions.locators import shown
from browserq.browsers.api import Error as PlaywrightError
from browserq.errors import Codes, StepFailed
from browserq.guards import check_url, safe_artifact_path, safe_filename
from browserq.templates.file_steps import DownloadStep

#: What Playwright says when a navigation turns into a download (the goto is then "aborted").
_NAVIGATION_BECAME_DOWNLOAD = ("Download is starting", "net::ERR_ABORTED")
_UNSAFE_PATH_CHARS = re.compile(r"[^A-Za-z0-9_.\[\]-]")


async def download(ctx: StepContext, step: DownloadStep) -> Any:
    """Start the download, wait for it, keep it: ``{filename, size, sha256, content_type, artifact}``."""
    files = run_files(ctx)
    if step.url is not None:
        check_url(step.url, ctx.settings.allowed_domains)
    page = ctx.page
    if files.watch is None:  # a runner that installed none: bound this step's downloads at least
        files.watch = DownloadWatch(page.context, files, warn=ctx.warn)
    watch: DownloadWatch = files.watch
    started = watch.expect(page)
    types: dict[str, str] = {}

    def on_response(response: Response) -> None:
        kind = response.headers.get("content-type")
        if kind:
            types[response.url] = kind

    page.on("response", on_response)
    try:
        await _trigger(ctx, step)
        try:
            watched = await asyncio.wait_for(asyncio.shield(started), ctx.timeout_ms / 1000)
        except TimeoutError:
            what = f"clicking {shown(step.selector)}" if step.selector is not None else f"opening {step.url}"
            raise StepFailed(
                Codes.DOWNLOAD_FAILED, f"{what} started no download within the step's timeout ({ctx.timeout_s:g} s)"
            ) from None
    except BaseException:
        watch.forget(started)
        if started.done() and not started.cancelled() and started.exception() is None:  # it started, the step failed
            await discard(started.result().item)
        raise
    finally:
        page.remove_listener("response", on_response)
    try:
        return await _keep(ctx, files, watched, types.get(watched.item.url))
    finally:
        await discard(watched.item)  # Playwright's temporary copy: nothing stays outside the store


async def _trigger(ctx: StepContext, step: DownloadStep) -> None:
    """Click the element, or open the URL (a goto that turns into a download is "aborted")."""
    if step.selector is not None:  # exactly one of selector and url (DownloadStep)
        await first(ctx, step.selector).click(timeout=ctx.timeout_ms)
        return
    try:
        await ctx.page.goto(cast(str, step.url), timeout=ctx.timeout_ms)  # no selector: a url
    except PlaywrightError as exc:
        if not any(text in str(exc) for text in _NAVIGATION_BECAME_DOWNLOAD):
            raise


async def _keep(ctx: StepContext, files: RunFiles, watched: Watched, content_type: str | None) -> dict[str, Any]:
    """Wait for the download to finish (the watch stops it at a limit), store it, count it."""
    item = watched.item
    try:
        temp = await asyncio.wait_for(asyncio.shield(watched.finished), ctx.timeout_ms / 1000)
    except TimeoutError:
        await discard(item)
        raise StepFailed(
            Codes.DOWNLOAD_FAILED, f"the download did not finish within the step's timeout ({ctx.timeout_s:g} s)"
        ) from None
    size = (await asyncio.to_thread(temp.stat)).st_size
    _check_size(files, size)
    data = await asyncio.to_thread(_read, temp, files.max_download_bytes)
    _check_size(files, len(data))
    filename = safe_filename(item.suggested_filename)
    name = f"downloads/{_UNSAFE_PATH_CHARS.sub('_', ctx.step_path) or 'step'}/{filename}"
    safe_artifact_path(ctx.artifact_base, name)
    kind = (content_type or mimetypes.guess_type(filename)[0] or "application/octet-stream")[:200]
    stored = await ctx.save_artifact("download", name, data, kind)
    files.downloaded += stored.size
    return {
        "filename": filename, "size": stored.size, "sha256": stored.sha256, "content_type": kind,
        "artifact": stored.path,
    }


def _check_size(files: RunFiles, size: int) -> None:
    refusal = too_large(files, size)
    if refusal is not None:
        raise refusal


def _read(path: Path, limit: int) -> bytes:
    with path.open("rb") as handle:
        return handle.read(limit + 1)  # one byte more: a file that grew is still caught
