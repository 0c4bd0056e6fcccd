"""The report as one self-contained HTML page: Jinja2 with autoescaping on for every value, CSS
inline, images as ``data:`` URIs — nothing is fetched when it is opened.

Page text, console lines, URLs and outputs are hostile input. Autoescaping writes each of them
as text; the page also carries a Content-Security-Policy that allows no script at all and no
request but ``data:`` images, so even a value that slipped through could neither run nor call out.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from jinja2 import Environment, PackageLoader, StrictUndefined

from browserq.report.model import Report
from browserq.report.outputs import MAX_ROWS

#: No script, no fetch, no frame, no form; images only from data: URIs, styles only inline.
CONTENT_SECURITY_POLICY = (
    "default-src 'none'; img-src data:; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'"
)
#: Step statuses the stylesheet has a colour for (others are drawn grey).
STATUSES = ("succeeded", "failed", "skipped", "started", "unknown")


def size_text(size: int) -> str:
    """Bytes for people: ``812 B``, ``14.2 KB``, ``3.1 MB``."""
    if size < 1024:
        return f"{size} B"
    if size < 1024 * 1024:
        return f"{size / 1024:.1f} KB"
    return f"{size / 1024 / 1024:.1f} MB"


def _environment() -> Environment:
    env = Environment(
        loader=PackageLoader("browserq.report", "templates"),
        autoescape=True,  # every {{ value }} is escaped, in text and in attributes
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["size"] = size_text
    env.filters["status_class"] = lambda s: s if s in STATUSES else "other"
    return env


_ENV = _environment()


def render_html(report: Report) -> str:
    """The page of ``report``."""
    return _ENV.get_template("report.html.j2").render(r=report, csp=CONTENT_SECURITY_POLICY, max_rows=MAX_ROWS)


def write_report(report: Report, target: Path) -> Path:
    """Write the page to ``target`` atomically (a half-written report is never left behind)."""
    target = Path(target)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(render_html(report))
        os.chmod(tmp, 0o644)  # mkstemp makes it 0600: a report is for sharing
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target
