"""A templates directory with a template that takes a secret, and the schedules file next to it."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tests.support.templates import write_templates

TEMPLATES = {
    "login": """
        params:
          base_url: {type: url, required: true}
          password: {type: secret, required: true}
          pages: {type: int, default: 1, min: 1, max: 5}
        steps:
          - {action: navigate, url: "${base_url}"}
    """,
    "ping": """
        params:
          url: {type: url, required: true}
        settings: {trace: off, step_timeout_s: 10, run_retries: 0}
        steps:
          - {action: navigate, url: "${url}"}
    """,
}


@pytest.fixture
def templates_dir(tmp_path: Path) -> Path:
    return write_templates(tmp_path / "templates", TEMPLATES)


def write_schedules(directory: Path, body: str) -> Path:
    path = directory / "schedules.yaml"
    path.write_text(textwrap.dedent(body).lstrip("\n"))
    return path
