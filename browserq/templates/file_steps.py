"""Steps that move files: ``download`` (the page gives the run a file) and ``upload`` (the run
gives the page one).

A download is kept as the run's artifact (kind ``download``); its result
``{filename, size, sha256, content_type, artifact}`` is what ``upload`` takes back, as is a
``file`` param's value (an input artifact stored by the producer). ``file:`` names one file:

* ``{artifact: PATH}`` — one of this run's artifacts (``${outputs.report.artifact}``);
* ``"${outputs.report}"`` / ``"${cv}"`` — a download's whole result, or a ``file`` param;
* ``{path: PATH}`` or a plain string — a file inside ``BROWSERQ_UPLOADS_DIR`` of the worker.

``filename:`` renames the file as the page sees it. The actions live in
:mod:`browserq.actions.download` and :mod:`browserq.actions.upload`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Literal, Union

from pydantic import BeforeValidator, Discriminator, Field, Tag, model_validator

from browserq.guards import upload_path_problem
from browserq.templates.fields import OutputName, Selector, StrictModel, exactly_one
from browserq.templates.params import show
from browserq.templates.step_base import ActionStep

#: Most files one upload step may set on an input.
MAX_UPLOAD_FILES = 100


class FileRef(StrictModel):
    """One file an upload sets: a run artifact or a file in the uploads directory."""

    artifact: Annotated[str, Field(min_length=1)] | None = None
    path: Annotated[str, Field(min_length=1)] | None = None
    #: The name the page sees (default: the file's own name).
    filename: Annotated[str, Field(min_length=1, max_length=255)] | None = None
    # Carried by a download's result and a file param's value; accepted (and ignored) so that
    # ``file: "${outputs.report}"`` takes the whole result.
    size: int | None = None
    sha256: str | None = None
    content_type: str | None = None

    @model_validator(mode="after")
    def _one_source(self) -> FileRef:
        exactly_one(self, ("artifact", "path"), "a file")
        return self


def _file(value: Any) -> Any:
    """A file is a mapping (a :class:`FileRef`) or a string: a path inside the uploads directory,
    or a ``${...}`` that renders to a download's result or a file param's value. Kept as written,
    so a rendered step is validated again from the same text."""
    if not isinstance(value, str | dict | FileRef):
        raise ValueError(
            "a file is {artifact: PATH}, {path: PATH}, a path string, or a download's or file "
            f"param's value; got {show(value)}"
        )
    return value


def _files_list(value: Any) -> Any:
    """``files:`` is a list of files; one file (a mapping or string) is taken as a list of one."""
    return [value] if isinstance(value, str | dict) else value


def as_file_ref(value: FileRef | str) -> FileRef:
    """A step's file as a :class:`FileRef` (a string is a path inside the uploads directory)."""
    return value if isinstance(value, FileRef) else FileRef(path=value)


def _file_kind(value: Any) -> str:
    return "path" if isinstance(value, str) else "ref"


FileSpec = Annotated[
    Union[Annotated[FileRef, Tag("ref")], Annotated[str, Tag("path")]],  # noqa: UP007 - tagged members
    Discriminator(_file_kind),
    BeforeValidator(_file),
]


class DownloadStep(ActionStep):
    """Click ``selector`` (or go to ``url``) and keep the file it downloads as an artifact."""

    action: Literal["download"] = "download"
    selector: Selector | None = None
    url: str | None = None
    #: Store ``{filename, size, sha256, content_type, artifact}`` in ``outputs[into]``.
    into: OutputName | None = None

    @model_validator(mode="after")
    def _one_trigger(self) -> DownloadStep:
        exactly_one(self, ("selector", "url"), "download")
        return self


class UploadStep(ActionStep):
    """Set the files of the file input ``selector`` (``file:`` one, ``files:`` several)."""

    action: Literal["upload"] = "upload"
    selector: Selector
    file: FileSpec | None = None
    files: Annotated[list[FileSpec], BeforeValidator(_files_list), Field(min_length=1, max_length=MAX_UPLOAD_FILES)] | None = None
    #: Store ``[{filename, size, sha256}]`` (what was set on the input) in ``outputs[into]``.
    into: OutputName | None = None

    @model_validator(mode="after")
    def _file_or_files(self) -> UploadStep:
        exactly_one(self, ("file", "files"), "upload")
        return self


FILE_STEP_CLASSES: tuple[type[ActionStep], ...] = (DownloadStep, UploadStep)


def upload_path_problems(step: dict[str, Any], literal: Callable[[str], str | None]) -> list[tuple[tuple[Any, ...], str]]:
    """``(where, problem)`` for each literal upload path of a raw ``upload`` step that would leave
    the uploads directory (``../x``, ``/etc/passwd``); ``literal`` undoes escapes, None for text
    with references (judged on the worker, and by the producer when built from params)."""
    found: list[tuple[tuple[Any, ...], str]] = []
    entries: list[tuple[tuple[Any, ...], Any]] = [(("file",), step.get("file"))]
    files = step.get("files")
    entries += [(("files", i), item) for i, item in enumerate(files)] if isinstance(files, list) else []
    for where, item in entries:
        if isinstance(item, dict):
            where, item = (*where, "path"), item.get("path")
        text = literal(item) if isinstance(item, str) else None
        problem = upload_path_problem(text) if text is not None else None
        if problem:
            found.append((where, problem))
    return found
