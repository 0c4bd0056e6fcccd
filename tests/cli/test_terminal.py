"""Page text reaches the terminal inert: a page whose accessible names, title, text and errors
hold terminal control sequences (a title change, a screen clear, an OSC-8 hyperlink, a C1 CSI,
a bidi override) and Rich markup, shown by ``locate`` and ``show`` — checked byte by byte."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli.helpers import browserq, no_traceback
from tests.support.http import html_pages, serve_http

#: What the page says, as JavaScript source: every kind of sequence a terminal acts on.
HOSTILE_JS = (
    r"\u001b]0;PWNED-TITLE\u0007"  # OSC 0: set the window title
    r"\u001b[2J\u001b[H"  # CSI: clear the screen, cursor home
    r"\u001b]8;;http://evil.example/\u001b\\click-me\u001b]8;;\u001b\\"  # OSC 8 hyperlink
    r"\u009b31m"  # C1 CSI (one character): red
    r"\u202eevil\u202c"  # right-to-left override
    r"[link=http://evil.example/]markup[/link][bold red]B[/bold red]"  # Rich markup
)
HOSTILE = json.loads(f'"{HOSTILE_JS}"')
PAGE = f"""<!doctype html><title>t</title>
<h1 id=h></h1><button id=b>x</button>
<script>
  const HOSTILE = "{HOSTILE_JS}";
  document.title = HOSTILE;
  document.getElementById('h').textContent = HOSTILE;
  document.getElementById('b').setAttribute('aria-label', HOSTILE);
  window.HOSTILE = HOSTILE;
</script>
"""
TEMPLATE = """name: hostile
version: 1.0.0
params:
  url: {type: url, required: true}
settings: {trace: off, step_timeout_s: 10, run_retries: 0, allow_eval: true}
steps:
  - {action: navigate, url: "${url}"}
  - {action: get, what: title, into: title}
  - {action: get, what: text, selector: "h1", into: heading}
  - {action: eval, expression: "(() => { throw new Error(window.HOSTILE) })()", into: boom}
"""
#: The only escape sequences the CLI itself writes: Rich's colours (SGR).
SGR = re.compile(rb"\x1b\[[0-9;]*m")
#: What must not reach a terminal from a page: ESC, BEL, C1 controls, bidi overrides.
FORBIDDEN = ("\x1b", "\x07", "\x9b", "\u202e", "\u202c")


@pytest.fixture(scope="module")
def page() -> Iterator[str]:
    with serve_http(html_pages({"/hostile": PAGE})) as host:
        yield f"http://{host}/hostile"


def inert(raw: str, *, coloured: bool = False) -> str:
    """``raw`` (a command's output) after the colour codes the CLI may write: it holds no
    control character from the page; returned for further checks."""
    data = raw.encode("utf-8")
    if coloured:
        data = SGR.sub(b"", data)
    text = data.decode("utf-8")
    for forbidden in FORBIDDEN:
        assert forbidden not in text, (forbidden, text[:3000])
    assert "\x1b]" not in raw and "\x1b[2J" not in raw
    return text


def test_locate_prints_accessible_names_inert(page: str, tmp_path: Path) -> None:
    piped = browserq(tmp_path, "locate", page)
    assert piped.returncode == 0, piped.stderr
    text = inert(piped.stdout)
    assert "␛]0;PWNED-TITLE␇" in text  # shown, harmless
    assert "[link=http://evil.example/]markup[/link]" in text  # printed as written, not markup
    table = inert(browserq(tmp_path, "locate", page, FORCE_COLOR="1").stdout, coloured=True)
    assert "PWNED-TITLE" in table and "[bold red]B[/bold red]" in table
    as_json = browserq(tmp_path, "locate", "--json", page)
    inert(as_json.stdout)
    [button] = [e for e in json.loads(as_json.stdout) if e["tag"] == "button"]
    assert button["selector"] == {"label": HOSTILE}  # the data itself is whole, escaped as JSON


def test_show_prints_page_text_and_errors_inert(page: str, tmp_path: Path) -> None:
    templates = tmp_path / "templates"
    templates.mkdir()
    (templates / "hostile.yaml").write_text(TEMPLATE)
    env = {"BROWSERQ_TEMPLATES_DIR": str(templates)}
    ran = browserq(tmp_path, "run", "hostile", "-p", f"url={page}", **env)
    assert ran.returncode == 1, ran.stdout + ran.stderr
    no_traceback(ran)
    inert(ran.stdout + ran.stderr)
    run_id = ran.stdout.split("browserq show ")[-1].split()[0]
    for variables in ({}, {"FORCE_COLOR": "1"}):
        shown = browserq(tmp_path, "show", run_id, **env, **variables)
        assert shown.returncode == 0, shown.stderr
        text = inert(shown.stdout + shown.stderr, coloured=bool(variables))
        assert "EVAL_ERROR" in text and "␛]0;PWNED-TITLE" in text, text  # (Rich drops BEL itself)
        assert "[link=http://evil.example/]markup[/link]" in text
    listed = browserq(tmp_path, "runs", **env)
    assert "PWNED-TITLE" in inert(listed.stdout)
    as_json = browserq(tmp_path, "show", "--json", run_id, **env)
    inert(as_json.stdout)
    data = json.loads(as_json.stdout)
    assert data["run"]["outputs"]["heading"] == HOSTILE and HOSTILE in data["run"]["error_message"]
