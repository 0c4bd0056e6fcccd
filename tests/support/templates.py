"""Template files for tests that run real workers: a worker reads templates from a directory, so a
test writes the ones it needs there, each from its name and body (the header is written here).

Why not ``tests.conftest.template``: that one loads a template in-process; workers in other
processes need a file under ``BROWSERQ_TEMPLATES_DIR``.
"""

from __future__ import annotations

import shutil
import textwrap
from collections.abc import Mapping
from pathlib import Path


def template_file(name: str, body: str, version: str = "1.0.0") -> str:
    """The YAML of template ``name``: its header, then ``body`` (dedented: params, settings, steps)."""
    return f"name: {name}\nversion: {version}\n" + textwrap.dedent(body).lstrip("\n")


def write_templates(directory: Path, templates: Mapping[str, str], copy_from: Path | None = None) -> Path:
    """Fill ``directory`` (created if missing) with every ``*.yaml`` of ``copy_from`` and one
    ``<name>.yaml`` per entry of ``templates`` (name → body, see :func:`template_file`)."""
    directory.mkdir(parents=True, exist_ok=True)
    if copy_from is not None:
        for path in copy_from.glob("*.yaml"):
            shutil.copy(path, directory / path.name)
    for name, body in templates.items():
        (directory / f"{name}.yaml").write_text(template_file(name, body))
    return directory
