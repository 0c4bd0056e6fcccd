"""The templates directory as a lookup table of ``name@version``.

Files are loaded on first use and re-read when their mtime or size changes, so editing a template
does not need a worker restart. A broken file is recorded in :meth:`TemplateRegistry.errors` and
never hides the good ones.
"""

from __future__ import annotations

import builtins
import re
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import structlog

from browserq.errors import TemplateInvalid, TemplateNotFound
from browserq.templates.errors import TemplatesDirMissing
from browserq.templates.fields import version_tuple
from browserq.templates.loader import (
    DEFAULT_MAX_REPEAT,
    DEFAULT_MAX_SELECTOR_LENGTH,
    LoadedTemplate,
    load_template_file,
    load_template_text,
)
from browserq.templates.messages import did_you_mean
from browserq.templates.params import show

if TYPE_CHECKING:
    from browserq.settings import Settings

log = structlog.get_logger(__name__)

TEMPLATE_SUFFIXES = (".yaml", ".yml")
#: Longest reference accepted (a name is at most 100 characters, a version 29).
MAX_REF_LENGTH = 200
_REF = re.compile(r"^(?P<name>[a-z0-9][a-z0-9_.-]*?)(?:@(?P<version>\d+(?:\.\d+){0,2}))?$")

Version = tuple[int, ...]


def parse_ref(ref: str) -> tuple[str, Version]:
    """``"quotes@1.2"`` → ``("quotes", (1, 2))``; no version → ``()`` (the newest)."""
    if len(ref) > MAX_REF_LENGTH:
        raise TemplateNotFound(
            f"invalid template reference {show(ref)}: it is {len(ref):,} characters long, the "
            f"limit is {MAX_REF_LENGTH}"
        )
    match = _REF.match(ref.strip())
    if not match:
        raise TemplateNotFound(
            f"invalid template reference {show(ref)}; use NAME, NAME@MAJOR, NAME@MAJOR.MINOR or "
            "NAME@MAJOR.MINOR.PATCH"
        )
    version = match.group("version")
    return match.group("name"), tuple(int(p) for p in version.split(".")) if version else ()


@dataclass(frozen=True)
class _Entry:
    stamp: tuple[int, int]
    loaded: LoadedTemplate | None
    error: TemplateInvalid | None
    name_hint: str | None = None
    version_hint: Version | None = None


@dataclass(frozen=True)
class _Broken:
    name: str | None
    version: Version | None
    error: TemplateInvalid


class TemplateRegistry:
    """Every template below ``directory``, found by ``name``, ``name@1``, ``name@1.2`` or exact."""

    def __init__(
        self,
        directory: str | Path,
        *,
        max_selector_length: int = DEFAULT_MAX_SELECTOR_LENGTH,
        max_repeat: int = DEFAULT_MAX_REPEAT,
    ) -> None:
        self.directory = Path(directory)
        self.max_selector_length = max_selector_length
        self.max_repeat = max_repeat
        self._lock = threading.RLock()
        self._files: dict[Path, _Entry] = {}
        self._index: dict[str, dict[Version, LoadedTemplate]] = {}
        self._errors: dict[Path, TemplateInvalid] = {}
        self._broken: list[_Broken] = []

    @classmethod
    def from_settings(cls, settings: Settings) -> TemplateRegistry:
        """The registry of ``BROWSERQ_TEMPLATES_DIR`` with every settings-derived limit applied.

        The one way the service builds a registry (producer, worker, CLI), so ``browserq
        templates list/validate`` refuse exactly what the producer refuses.
        """
        return cls(
            settings.templates_dir,
            max_selector_length=settings.max_selector_length,
            max_repeat=settings.max_repeat,
        )

    def load_text(self, text: str, source: str = "<string>") -> LoadedTemplate:
        """Check a template body held elsewhere (a run's stored body) with this registry's limits."""
        return load_template_text(
            text, source, max_selector_length=self.max_selector_length, max_repeat=self.max_repeat
        )

    def validate_files(self, paths: Iterable[Path]) -> dict[Path, LoadedTemplate | TemplateInvalid]:
        """:func:`validate_files` with this registry's limits (files inside its directory or not)."""
        return validate_files(
            paths, max_selector_length=self.max_selector_length, max_repeat=self.max_repeat
        )

    # --- public --------------------------------------------------------------------------
    def resolve(self, ref: str) -> LoadedTemplate:
        """The newest template matching ``ref``; TemplateNotFound says what exists instead."""
        name, wanted = parse_ref(ref)
        with self._lock:
            self._refresh()
            versions = self._index.get(name, {})
            matching = [v for v in versions if v[: len(wanted)] == wanted]
            if matching:
                return versions[max(matching)]
            for broken in self._broken:
                if broken.name == name and (
                    broken.version is None or broken.version[: len(wanted)] == wanted
                ):
                    raise broken.error
            if versions:
                available = ", ".join(versions[v].version for v in sorted(versions))
                raise TemplateNotFound(
                    f"template '{name}' has no version matching {'.'.join(map(str, wanted))}; "
                    f"available: {available}"
                )
            names = sorted(self._index)
            available = ", ".join(names) if names else f"none (no templates in {self.directory})"
            raise TemplateNotFound(
                f"no template named '{name}'{did_you_mean(name, names)}; available: {available}"
            )

    def list(self) -> list[LoadedTemplate]:
        """Every valid template, by name then numeric version."""
        with self._lock:
            self._refresh()
            return [
                self._index[name][version]
                for name in sorted(self._index)
                for version in sorted(self._index[name])
            ]

    def errors(self) -> dict[Path, TemplateInvalid]:
        """Files that failed to load (or clash with another file), with their problems."""
        with self._lock:
            self._refresh()
            return dict(self._errors)

    # --- loading -------------------------------------------------------------------------
    def _scan(self) -> builtins.list[Path]:
        if not self.directory.is_dir():
            raise TemplatesDirMissing(
                f"templates directory '{self.directory}' does not exist; set "
                "BROWSERQ_TEMPLATES_DIR to the folder holding your template YAML files"
            )
        found = []
        for path in self.directory.rglob("*"):
            relative = path.relative_to(self.directory).parts
            hidden = any(part.startswith(".") for part in relative)
            if path.suffix in TEMPLATE_SUFFIXES and not hidden and path.is_file():
                found.append(path)
        return sorted(found)

    def _refresh(self) -> None:
        paths = self._scan()
        changed = set(self._files) != set(paths)
        current: dict[Path, _Entry] = {}
        for path in paths:
            try:
                stat = path.stat()
            except OSError:
                changed = True
                continue
            stamp = (stat.st_mtime_ns, stat.st_size)
            entry = self._files.get(path)
            if entry is None or entry.stamp != stamp:
                entry = self._load(path, stamp)
                changed = True
            current[path] = entry
        if changed:  # the new state is taken only once it is complete
            self._rebuild(current)

    def _load(self, path: Path, stamp: tuple[int, int]) -> _Entry:
        """One file's outcome; whatever goes wrong stays this file's problem."""
        try:
            loaded = load_template_file(
                path, max_selector_length=self.max_selector_length, max_repeat=self.max_repeat
            )
        except TemplateInvalid as exc:
            return _broken_entry(stamp, path, exc)
        except TemplateNotFound:  # deleted between scan and read
            gone = TemplateInvalid(str(path), ["the file disappeared while loading"])
            return _broken_entry(stamp, path, gone)
        except Exception as exc:  # a bug in a check must not take every other template down
            log.exception("template file could not be loaded", path=str(path))
            problem = f"could not be loaded ({type(exc).__name__}: {show(str(exc), 200)})"
            return _broken_entry(stamp, path, TemplateInvalid(str(path), [problem]))
        return _Entry(stamp, loaded, None)

    def _rebuild(self, files: dict[Path, _Entry]) -> None:
        errors: dict[Path, TemplateInvalid] = {}
        broken: list[_Broken] = []
        loaded: dict[Path, LoadedTemplate] = {}
        for path, entry in files.items():
            if entry.error is not None:
                errors[path] = entry.error
                broken.append(_Broken(entry.name_hint, entry.version_hint, entry.error))
            elif entry.loaded is not None:
                loaded[path] = entry.loaded
        clashes = duplicate_errors(loaded)
        index: dict[str, dict[Version, LoadedTemplate]] = {}
        for path, item in loaded.items():
            if path in clashes:
                continue
            index.setdefault(item.name, {})[version_tuple(item.version)] = item
        for path, error in clashes.items():
            errors[path] = error
            item = loaded[path]
            broken.append(_Broken(item.name, version_tuple(item.version), error))
        self._files, self._index, self._errors, self._broken = files, index, errors, broken


def duplicate_errors(loaded: dict[Path, LoadedTemplate]) -> dict[Path, TemplateInvalid]:
    """Files declaring a ``name@version`` that another file declares too: an error for each."""
    by_ref: dict[str, list[Path]] = {}
    for path, item in loaded.items():
        by_ref.setdefault(item.ref, []).append(path)
    errors: dict[Path, TemplateInvalid] = {}
    for ref, paths in by_ref.items():
        if len(paths) < 2:
            continue
        files = ", ".join(str(p) for p in paths)
        message = (
            f"{ref} is declared by more than one file: {files}; "
            "give each file its own name or version"
        )
        first = loaded[paths[0]]
        for path in paths:
            errors[path] = TemplateInvalid(str(path), [message], name=first.name, version=first.version)
    return errors


def validate_files(
    paths: Iterable[Path],
    *,
    max_selector_length: int = DEFAULT_MAX_SELECTOR_LENGTH,
    max_repeat: int = DEFAULT_MAX_REPEAT,
) -> dict[Path, LoadedTemplate | TemplateInvalid]:
    """Each file's template or its problems, duplicates across the files included (for
    ``browserq templates validate``, which checks files outside any registry too)."""
    outcome: dict[Path, LoadedTemplate | TemplateInvalid] = {}
    for path in paths:
        try:
            outcome[path] = load_template_file(
                path, max_selector_length=max_selector_length, max_repeat=max_repeat
            )
        except TemplateInvalid as exc:
            outcome[path] = exc
        except TemplateNotFound as exc:
            outcome[path] = TemplateInvalid(str(path), [str(exc)])
    loaded = {p: v for p, v in outcome.items() if isinstance(v, LoadedTemplate)}
    outcome.update(duplicate_errors(loaded))
    return outcome


def _broken_entry(stamp: tuple[int, int], path: Path, error: TemplateInvalid) -> _Entry:
    """A broken file, filed under the name it declares (else its file name) and its version."""
    name = error.name or path.stem.split("@")[0]
    version = version_tuple(error.version) if error.version else None
    if error.name is None:  # say which template the problems belong to
        error = TemplateInvalid(error.source, error.problems, name=name)
    return _Entry(stamp, None, error, name, version)


#: ``TemplatesDirMissing`` is re-exported for its old import path (it is defined in templates/errors.py).
__all__ = [
    "MAX_REF_LENGTH",
    "TEMPLATE_SUFFIXES",
    "TemplateRegistry",
    "TemplatesDirMissing",
    "duplicate_errors",
    "parse_ref",
    "validate_files",
]
