"""``browserq locate URL``: the locators it prints drive the page when pasted into a template,
each matches its element alone, and a bad URL is one line."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import Page

from browserq.cli.locate import yaml_selector
from browserq.cli.locate_page import find_locators
from browserq.execute.runtime import Runtime
from tests.actions.test_locators import FORM
from tests.cli.helpers import browserq, no_traceback
from tests.conftest import template
from tests.support.chromium import LaunchedChromium as Chromium
from tests.support.chromium import chromium_fixture
from tests.support.http import free_port, html_pages, serve_http

chromium = chromium_fixture()

#: Two buttons alike in every way but their place: neither role+name nor any attribute tells them apart.
TWINS = """<!doctype html><title>Twins</title>
<div><button onclick="document.title='first'">Go</button></div>
<div><button onclick="document.title='second'">Go</button></div>
<input data-testid="code" aria-label="Code">
"""


@pytest.fixture(scope="module")
def site() -> Iterator[str]:
    with serve_http(html_pages({"/form": FORM, "/twins": TWINS})) as host:
        yield f"http://{host}"


@pytest.fixture(scope="module")
def listed(site: str, tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    done = browserq(tmp_path_factory.mktemp("locate"), "locate", "--json", f"{site}/form")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _one(listed: list[dict[str, Any]], element: str) -> dict[str, Any]:
    matching = [e for e in listed if e["element"] == element]
    assert len(matching) == 1, (element, [e["element"] for e in listed])
    return matching[0]


def test_locate_prefers_role_and_name_and_says_what_to_do(listed: list[dict[str, Any]]) -> None:
    send = _one(listed, 'button "Send"')
    assert (send["selector"], send["by"], send["action"]) == ({"role": "button", "name": "Send"}, "role", "click")
    assert send["yaml"] == 'selector: {role: button, name: "Send"}'
    assert _one(listed, 'textbox "Full name"')["action"] == "fill"
    assert _one(listed, 'checkbox "Subscribe to news"')["action"] == "check"
    country = _one(listed, 'combobox "Country"')
    assert country["action"] == "select" and {"value": "jp", "label": "Japan"} in country["options"]
    pay = _one(listed, 'button "Pay ${amount}"')
    assert pay["selector"] == {"role": "button", "name": "Pay $${amount}"}  # as a template writes it


def test_two_alike_buttons_get_locators_of_their_own(listed: list[dict[str, Any]]) -> None:
    deletes = [e for e in listed if e["element"] == 'button "Delete"']
    assert len(deletes) == 2
    assert all(e["by"] != "role" and "within" in e["selector"] for e in deletes), deletes
    assert deletes[0]["selector"] != deletes[1]["selector"]


def test_pasted_locators_drive_the_form(listed: list[dict[str, Any]], site: str, sqlite_runtime: Runtime) -> None:
    """The template is built from ``--json`` alone: an action and a selector per element."""
    by_element = {e["element"]: e for e in listed}
    values = {'textbox "Full name"': "Ada", 'textbox "Email"': "ada@example.com", 'combobox "Country"': "jp"}
    steps = [{"action": "navigate", "url": f"{site}/form"}]
    for element in ('textbox "Full name"', 'textbox "Email"', 'combobox "Country"',
                    'checkbox "Subscribe to news"', 'button "Send"'):
        found = by_element[element]
        step: dict[str, Any] = {"action": found["action"], "selector": found["selector"]}
        if element in values:
            step["value"] = values[element]
        steps.append(step)
    steps.append({"action": "get", "selector": "#echo", "into": "sent"})
    second_delete = [e for e in listed if e["element"] == 'button "Delete"'][1]
    steps += [{"action": "click", "selector": second_delete["selector"]},
              {"action": "get", "selector": "#echo", "into": "deleted"},
              {"action": by_element['button "Pay ${amount}"']["action"],
               "selector": by_element['button "Pay ${amount}"']["selector"]},
              {"action": "get", "selector": "#echo", "into": "paid"}]
    body = "steps:\n" + "".join(f"  - {json.dumps(step, ensure_ascii=False)}\n" for step in steps)
    outcome = sqlite_runtime.run_loaded(template(body))
    assert outcome.status == "completed", outcome
    assert json.loads(outcome.outputs["sent"]) == {"name": "Ada", "email": "ada@example.com", "country": "jp",
                                                   "subscribe": "on", "message": ""}
    assert (outcome.outputs["deleted"], outcome.outputs["paid"]) == ("deleted beta", "paid")


def test_piped_output_is_one_line_per_element_ready_to_paste(site: str, tmp_path: Path) -> None:
    done = browserq(tmp_path, "locate", f"{site}/form", "--wait-for", "{role: button, name: Send}")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "element\taction\tselector\tby"
    assert 'button "Send"\tclick\t{role: button, name: "Send"}\trole' in lines


def test_nothing_but_place_tells_twins_apart(chromium: Chromium, site: str) -> None:
    async def act(page: Page) -> list[Any]:
        await page.goto(f"{site}/twins")
        return await find_locators(page, 50)

    found = chromium.on_page(act)
    buttons = [f for f in found if f.element.role == "button"]
    assert [f.strategy for f in buttons] == ["css path", "css path"]
    assert [yaml_selector(f.selector) for f in buttons] == ['"body > div:nth-of-type(1) > button"',
                                                            '"body > div:nth-of-type(2) > button"']
    code = [f for f in found if f.element.info.get("testid") == "code"]
    assert [(f.strategy, f.selector, f.action) for f in code] == [("role", {"role": "textbox", "name": "Code"}, "fill")]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["ftp://example.test/"], "error: URL_DENIED: URL scheme 'ftp:' is not allowed (only http and https are)"),
        (["localhost:8000"], "error: URL_DENIED: URL scheme 'localhost:' is not allowed"),
        (["http://127.0.0.1:{port}/"], "error: could not load http://127.0.0.1:{port}/: "),
        (["{site}/form", "--wait-for", "{role: buton}"], "error: --wait-for: unknown ARIA role 'buton'"),
        (["{site}/form", "--wait-for", "#never", "--timeout", "1"],
         "error: {site}/form did not show #never within 1 s (raise --timeout)"),
    ],
)
def test_a_bad_url_or_option_is_one_line(args: list[str], message: str, site: str, tmp_path: Path) -> None:
    port = free_port()
    fill = lambda text: text.replace("{site}", site).replace("{port}", str(port))  # noqa: E731
    done = browserq(tmp_path, "locate", *map(fill, args))
    assert done.returncode == 2, done.stdout + done.stderr
    no_traceback(done)
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith(fill(message)), done.stderr
