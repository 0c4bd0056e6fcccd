"""``upload``: set the files of a file input from the run's artifacts or the uploads directory.

An artifact must be one of *this* run's (a download, a ``file`` param's input): a template or a
param cannot reach another run's files. A path is resolved inside ``BROWSERQ_UPLOADS_DIR``;
``..``, absolute paths and symlinks out of it fail ``PATH_DENIED`` before anything is read.
"""

from __future__ import annotations

import asyncio
import hashlib
import mimetypes
from pathlib import PurePosixPath
from typing import Any

from playwright.async_api import FilePayload

from browserq.actions.context import StepContext
from browserq.actions.files import RunFiles, run_files
from browserq.actions.locate import first
from browserq.errors import Codes, StepFailed
from browserq.guards import artifact_name_problem, safe_filename, safe_upload_path
from browserq.templates.file_steps import FileRef, UploadStep, as_file_ref


async def upload(ctx: StepContext, step: UploadStep) -> Any:
    """Set the input's files; returns ``[{filename, size, sha256}]``, one per file set."""
    files = run_files(ctx)
    specs = [step.file] if step.file is not None else list(step.files or [])
    payloads = [await _payload(files, as_file_ref(spec)) for spec in specs]
    await first(ctx, step.selector).set_input_files(payloads, timeout=ctx.timeout_ms)
    return [
        {"filename": p["name"], "size": len(p["buffer"]), "sha256": hashlib.sha256(p["buffer"]).hexdigest()}
        for p in payloads
    ]


async def _payload(files: RunFiles, ref: FileRef) -> FilePayload:
    """The file's name, type and bytes, read from where ``ref`` says (checked first)."""
    if ref.artifact is not None:
        data, own_name = await _artifact(files, ref.artifact), PurePosixPath(ref.artifact).name
    else:
        assert ref.path is not None
        data, own_name = await asyncio.to_thread(_uploads_file, files, ref.path), PurePosixPath(ref.path).name
    name = safe_filename(ref.filename or own_name, fallback="upload")
    kind = ref.content_type or mimetypes.guess_type(name)[0] or "application/octet-stream"
    return {"name": name, "mimeType": kind, "buffer": data}


async def _artifact(files: RunFiles, relative: str) -> bytes:
    problem = artifact_name_problem(relative)
    if problem or not relative.startswith(f"{files.run_id}/"):
        raise StepFailed(
            Codes.PATH_DENIED,
            problem or f"artifact {relative[:100]!r} is not one of this run's; an upload takes this run's "
            "downloads and file params (their artifact)",
        )
    try:
        return await asyncio.to_thread(files.read, relative)
    except FileNotFoundError:
        raise StepFailed(Codes.UPLOAD_FILE_MISSING, f"artifact {relative!r} is not in the artifact store") from None


def _uploads_file(files: RunFiles, path: str) -> bytes:
    try:
        target = safe_upload_path(files.uploads_dir, path)
    except StepFailed as exc:
        if path.startswith(f"{files.run_id}/"):  # ${outputs.report.artifact} given as a path
            raise StepFailed(exc.code, f"{exc.message}; for this run's artifact write file: {{artifact: ...}}") from None
        raise
    size = target.stat().st_size
    if size > files.max_file_bytes:
        raise StepFailed(
            Codes.INVALID_STEP_INPUT,
            f"upload path {path!r} is {size:,} bytes, over the limit of {files.max_file_bytes:,} "
            "(BROWSERQ_MAX_FILE_PARAM_BYTES)",
        )
    with target.open("rb") as handle:
        return handle.read(files.max_file_bytes + 1)
