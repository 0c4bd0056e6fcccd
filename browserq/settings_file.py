"""The settings file (``BROWSERQ_SETTINGS_FILE``, YAML or TOML) as a pydantic-settings source.

Kept apart from :mod:`browserq.settings` so that the one settings object reads as its fields. A
key that is not a setting is refused with the known names, so a typo never falls back silently.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any

import yaml
from pydantic_settings import PydanticBaseSettingsSource

from browserq.errors import ConfigError


class SettingsFileSource(PydanticBaseSettingsSource):
    """Reads ``BROWSERQ_SETTINGS_FILE`` (YAML or TOML) and rejects keys that are not settings."""

    def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:  # pragma: no cover
        return None, field_name, False

    def __call__(self) -> dict[str, Any]:
        path = os.environ.get("BROWSERQ_SETTINGS_FILE")
        if not path:
            return {}
        file = Path(path)
        if not file.is_file():
            raise ConfigError(f"BROWSERQ_SETTINGS_FILE points to {path!r}, which is not a file")
        text = file.read_text()
        data = tomllib.loads(text) if file.suffix == ".toml" else yaml.safe_load(text)
        if data is None:
            return {}
        if not isinstance(data, dict):
            raise ConfigError(f"{path}: expected a mapping of setting names to values")
        unknown = sorted(set(data) - set(self.settings_cls.model_fields))
        if unknown:
            known = ", ".join(sorted(self.settings_cls.model_fields))
            raise ConfigError(f"{path}: unknown setting(s) {', '.join(unknown)}; known settings: {known}")
        return data
