"""The templates package's error: a missing directory is a config error and a lookup failure."""

from __future__ import annotations

from browserq.errors import ConfigError, ErrorClass, TemplateNotFound
from browserq.templates import TemplatesDirMissing
from browserq.templates import registry as registry_module
from browserq.templates.errors import TemplatesDirMissing as Defined


def test_templates_dir_missing_is_permanent_and_caught_either_way() -> None:
    error = Defined("templates directory 'x' does not exist")
    assert isinstance(error, ConfigError) and isinstance(error, TemplateNotFound)
    assert error.policy is ErrorClass.PERMANENT
    assert TemplatesDirMissing is Defined is registry_module.TemplatesDirMissing
