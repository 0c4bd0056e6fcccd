"""The docs a newcomer walks: docs/architecture.md names every package, and every relative link
in README.md and docs/ leads to a file that exists."""

from __future__ import annotations

import re
from pathlib import Path

import browserq

REPO = Path(browserq.__file__).resolve().parent.parent
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def test_architecture_names_every_package() -> None:
    text = (REPO / "docs" / "architecture.md").read_text()
    packages = sorted(p.parent.name for p in (REPO / "browserq").glob("*/__init__.py"))
    missing = [name for name in packages if f"{name}/" not in text]
    assert not missing, f"docs/architecture.md does not name these packages: {missing}"


def test_every_relative_link_leads_somewhere() -> None:
    broken = []
    for page in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]:
        for target in LINK.findall(page.read_text()):
            if "://" in target or target.startswith("mailto:"):
                continue
            if not (page.parent / target).exists():
                broken.append(f"{page.relative_to(REPO)} → {target}")
    assert not broken, "links to nothing:\n" + "\n".join(broken)
