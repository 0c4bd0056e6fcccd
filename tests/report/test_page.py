"""The report page as a person sees it: generated from real runs, then opened OFFLINE in real
headless Chromium (every request but file:// refused), screenshotted, and read back.

What must hold: the timeline is drawn (one bar per step attempt, each with a width, retries on
their step's row), the inline screenshots decode, the trace command is there, and the script and
markup the scraped page put in outputs, console lines and error messages are shown as text —
nothing of it runs or becomes an element.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from browserq.report import build_report, write_report
from tests.report.conftest import SECRET, Runs
from tests.report.pages import IMG_PAYLOAD, PAYLOAD
from tests.support.chromium import LaunchedChromium, chromium_fixture

chromium = chromium_fixture()

#: Where the screenshots of the two reports are kept for people to look at.
SHOTS = {"completed": Path("/tmp/report-completed.png"), "failed": Path("/tmp/report-failed.png")}

READ_BACK = """() => ({
  rows: [...document.querySelectorAll('.trow')].map(row => ({
    step: row.dataset.step,
    bars: [...row.querySelectorAll('.bar')].map(b => ({
      width: b.getBoundingClientRect().width, cls: b.className, title: b.title})),
  })),
  images: [...document.images].map(i => ({complete: i.complete, width: i.naturalWidth, src: i.src.slice(0, 22)})),
  scripts: document.querySelectorAll('script').length,
  handlers: [...document.querySelectorAll('*')].filter(e => [...e.attributes].some(a => a.name.startsWith('on'))).length,
  injected: document.querySelectorAll('#injected').length,
  pwned: window.__pwned === undefined ? null : window.__pwned,
  title: document.title,
  status: document.querySelector('#status').textContent,
  text: document.body.innerText,
  console: [...document.querySelectorAll('table.console td')].map(td => td.textContent),
  outputs: [...document.querySelectorAll('#outputs td')].map(td => td.textContent),
  traces: [...document.querySelectorAll('#traces code')].map(c => c.textContent),
  dom: [...document.querySelectorAll('details.dom pre')].map(p => p.textContent),
})"""


def open_offline(chromium: LaunchedChromium, report: Path, shot: Path) -> dict[str, Any]:
    """Open ``report`` with the network refused; screenshot it whole; read the page back."""

    async def act(page: Any) -> dict[str, Any]:
        requested: list[str] = []
        page.on("request", lambda request: requested.append(request.url))

        async def offline(route: Any) -> None:
            if route.request.url.startswith("file:"):
                await route.continue_()
            else:
                await route.abort()

        await page.route("**/*", offline)
        await page.set_viewport_size({"width": 1366, "height": 900})
        await page.goto(report.as_uri(), wait_until="load")
        await page.screenshot(path=str(shot), full_page=True)
        found = await page.evaluate(READ_BACK)
        found["requested"] = requested
        return found

    return chromium.on_page(act)


def report_of(runs: Runs, run_id: str, tmp_path: Path) -> Path:
    return write_report(build_report(runs.runtime.store, runs.runtime.settings, run_id), tmp_path / "report.html")


def assert_self_contained(page: dict[str, Any], report: Path) -> None:
    """The hostile text is on the page, as text: no script element, handler or injected node;
    and the page asked for nothing but itself (its pictures are data: URIs inside it)."""
    assert page["scripts"] == 0 and page["handlers"] == 0 and page["injected"] == 0
    assert page["pwned"] is None and page["title"] != "pwned"
    assert [url for url in page["requested"] if not url.startswith("data:")] == [report.as_uri()]


def test_completed_run_report_renders_offline(runs: Runs, tmp_path: Path, chromium: LaunchedChromium) -> None:
    report = report_of(runs, runs.completed, tmp_path)
    page = open_offline(chromium, report, SHOTS["completed"])
    steps = runs.runtime.store.steps.steps(runs.completed)
    assert page["status"] == "completed"
    # the timeline: one row per step, one bar per attempt, every bar drawn with a width
    assert [row["step"] for row in page["rows"]] == [s.step_path for s in steps]
    assert [len(row["bars"]) for row in page["rows"]] == [1] * len(steps)
    assert all(bar["width"] > 0 for row in page["rows"] for bar in row["bars"])
    assert [row["bars"][0]["cls"] for row in page["rows"]] == [f"bar {s.status}" for s in steps]
    assert "bar skipped" in [row["bars"][0]["cls"] for row in page["rows"]]  # the optional click
    # the screenshot step's picture, inline and decoded
    assert len(page["images"]) == 1 and page["images"][0]["src"].startswith("data:image/png;base64")
    assert page["images"][0]["complete"] and page["images"][0]["width"] > 0
    # the outputs, hostile text shown as text
    assert PAYLOAD in page["outputs"] and IMG_PAYLOAD in page["outputs"] and "Hostile quotes" in page["text"]
    assert '"token": "[secret:token]"' in page["text"] and SECRET not in report.read_text()
    assert_self_contained(page, report)
    assert page["traces"] == []  # trace: on_failure, and nothing failed


def test_failed_run_report_shows_snapshot_retries_and_trace(
    runs: Runs, tmp_path: Path, chromium: LaunchedChromium
) -> None:
    report = report_of(runs, runs.failed, tmp_path)
    page = open_offline(chromium, report, SHOTS["failed"])
    assert page["status"] == "failed" and "SELECTOR_NOT_FOUND" in page["text"]
    # the retried click: two bars on its row, both failed, hover titles saying which try
    rows = {row["step"]: row["bars"] for row in page["rows"]}
    assert [len(bars) for bars in rows.values()] == [1, 1, 2]
    click = rows["2"]
    assert [bar["cls"] for bar in click] == ["bar failed", "bar failed"]
    assert all(bar["width"] > 0 for bars in rows.values() for bar in bars)
    assert "try 1 · failed" in click[0]["title"] and "try 2 · failed" in click[1]["title"]
    assert "<b id=injected>" in click[1]["title"]  # the selector, as text in the attribute
    # the failure snapshot: its screenshot decoded, the console and the DOM as text
    [shot] = page["images"]
    assert shot["src"].startswith("data:image/png;base64") and shot["complete"] and shot["width"] > 0
    assert PAYLOAD in page["console"] and f"careful: {IMG_PAYLOAD}" in page["console"]
    assert page["dom"] and "Hostile quotes" in page["dom"][0]
    # the trace: the command that opens it from this host
    [trace] = [a for a in runs.runtime.store.steps.artifacts(runs.failed) if a.kind == "trace"]
    local = runs.runtime.settings.artifacts_dir.resolve() / trace.path
    assert page["traces"] == [f"playwright show-trace {local}"]
    assert_self_contained(page, report)
