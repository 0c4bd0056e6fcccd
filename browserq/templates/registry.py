"""The templates directory as a lookup table of ``name@version``.

Files are loaded on first use and re-read when their mtime or size changes, so editing a template
does not need a worker restart. A broken file is recorded in :meth:`TemplateRegistry.errors` and
never hides the good ones.
"""

from __future__ import annotations

import builtins
import re
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from browserq.errors import ConfigError, TemplateInvalid, TemplateNotFound
from browserq.templates.loader import (
    DEFAULT_MAX_REPEAT,
    DEFAULT_MAX_SELECTOR_LENGTH,
    LoadedTemplate,
    load_template_file,
)
from browserq.templates.messages import did_you_mean
from browserq.templates.model import SEMVER, version_tuple

if TYPE_CHECKING:
    from browserq.settings import Settings

TEMPLATE_SUFFIXES = (".yaml", ".yml")
_REF = re.compile(r"^(?P<name>[a-z0-9][a-z0-9_.-]*?)(?:@(?P<version>\d+(?:\.\d+){0,2}))?$")

Version = tuple[int, ...]


class TemplatesDirMissing(ConfigError, TemplateNotFound):
    """The configured templates directory does not exist (both a config and a lookup failure)."""


def parse_ref(ref: str) -> tuple[str, Version]:
    """``"quotes@1.2"`` → ``("quotes", (1, 2))``; no version → ``()`` (the newest)."""
    match = _REF.match(ref.strip())
    if not match:
        raise TemplateNotFound(
            f"invalid template reference {ref!r}; use NAME, NAME@MAJOR, NAME@MAJOR.MINOR or "
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
        return cls(
            settings.templates_dir,
            max_selector_length=settings.max_selector_length,
            max_repeat=settings.max_repeat,
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
        self._files = current
        if changed:
            self._rebuild()

    def _load(self, path: Path, stamp: tuple[int, int]) -> _Entry:
        try:
            loaded = load_template_file(
                path, max_selector_length=self.max_selector_length, max_repeat=self.max_repeat
            )
        except TemplateInvalid as exc:
            name, version = _hints(path)
            return _Entry(stamp, None, exc, name, version)
        except TemplateNotFound:  # deleted between scan and read
            exc = TemplateInvalid(str(path), ["the file disappeared while loading"])
            return _Entry(stamp, None, exc, None, None)
        return _Entry(stamp, loaded, None)

    def _rebuild(self) -> None:
        by_ref: dict[tuple[str, Version], list[LoadedTemplate]] = {}
        errors: dict[Path, TemplateInvalid] = {}
        broken: list[_Broken] = []
        for path, entry in self._files.items():
            if entry.error is not None:
                errors[path] = entry.error
                broken.append(_Broken(entry.name_hint, entry.version_hint, entry.error))
            elif entry.loaded is not None:
                key = (entry.loaded.name, version_tuple(entry.loaded.version))
                by_ref.setdefault(key, []).append(entry.loaded)
        index: dict[str, dict[Version, LoadedTemplate]] = {}
        for (name, version), loaded in by_ref.items():
            if len(loaded) == 1:
                index.setdefault(name, {})[version] = loaded[0]
                continue
            files = ", ".join(item.source for item in loaded)
            message = (
                f"{loaded[0].ref} is declared by more than one file: {files}; "
                "give each file its own name or version"
            )
            error = TemplateInvalid(loaded[0].ref, [message])
            for item in loaded:
                errors[Path(item.source)] = error
            broken.append(_Broken(name, version, error))
        self._index, self._errors, self._broken = index, errors, broken


def _hints(path: Path) -> tuple[str | None, Version | None]:
    """Best guess at a broken file's name and version, so resolving it reports its problems."""
    name: str | None = None
    version: Version | None = None
    try:
        data: Any = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        data = None
    if isinstance(data, dict):
        if isinstance(data.get("name"), str):
            name = data["name"]
        if isinstance(data.get("version"), str) and SEMVER.match(data["version"]):
            version = version_tuple(data["version"])
    return name or path.stem.split("@")[0], version
