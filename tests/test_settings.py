"""The settings object: every setting documented, parsed by the limits' own parsers."""

from __future__ import annotations

from tests.conftest import REPO


def test_readme_lists_every_setting() -> None:
    from browserq.settings import Settings

    readme = (REPO / "README.md").read_text()
    missing = [name for name in Settings.model_fields if f"`BROWSERQ_{name.upper()}`" not in readme]
    assert not missing, f"README's settings table lacks {missing}"
