"""Selectors written as locator mappings (``{role: button, name: "Send"}``…): checked when the
template loads, found on a real page by every form, and used by every place that takes a
selector (actions, ``optional``, the missing-element check, asserts, repeats, extract fields)."""

from __future__ import annotations

import json
import typing
from collections.abc import Iterator

import pytest
from playwright.async_api import Page

from browserq.actions import to_locator
from browserq.errors import TemplateInvalid
from browserq.execute.runtime import Runtime
from browserq.templates import ARIA_ROLES, LocatorSpec, load_template_text, selector_text
from tests.conftest import template
from tests.support.chromium import LaunchedChromium as Chromium
from tests.support.chromium import chromium_fixture
from tests.support.http import html_pages, serve_http

chromium = chromium_fixture()

#: A contact form, two rows with the same "Delete" button, and a page-side echo of what happened.
FORM = """<!doctype html>
<html><head><title>Contact</title></head><body>
<h1>Contact us</h1>
<form id="contact">
  <label for="full">Full name</label> <input id="full" name="name">
  <label>Email <input type="email" name="email" placeholder="you@example.com"></label>
  <label for="country">Country</label>
  <select id="country" name="country" data-testid="country-select">
    <option value="">Choose</option><option value="fr">France</option><option value="jp">Japan</option>
  </select>
  <label><input type="checkbox" name="subscribe"> Subscribe to news</label>
  <textarea name="message" placeholder="Your message"></textarea>
  <button type="submit">Send</button>
</form>
<ul id="rows">
  <li id="row-1">Alpha <button type="button" onclick="echo('deleted alpha')">Delete</button></li>
  <li id="row-2">Beta <button type="button" onclick="echo('deleted beta')">Delete</button></li>
</ul>
<button type="button" onclick="echo('paid')">Pay ${amount}</button>
<a href="#help" title="Get help">Help</a>
<img alt="Company logo" width="10" height="10" src="data:image/gif;base64,R0lGODlhAQABAAAAACw=">
<pre id="echo"></pre>
<script>
  function echo(text) { document.getElementById('echo').textContent = text; }
  document.getElementById('contact').addEventListener('submit', (event) => {
    event.preventDefault();
    echo(JSON.stringify(Object.fromEntries(new FormData(event.target))));
  });
</script>
</body></html>
"""


@pytest.fixture(scope="module")
def form_url() -> Iterator[str]:
    with serve_http(html_pages({"/form": FORM})) as host:
        yield f"http://{host}/form"


# --- the model -----------------------------------------------------------------------------------
def test_the_roles_are_playwrights() -> None:
    """The role list checked at load is the one ``get_by_role`` takes in the installed Playwright."""
    hints = typing.get_type_hints(Page.get_by_role)
    assert tuple(typing.get_args(hints["role"])) == ARIA_ROLES


@pytest.mark.parametrize(
    ("selector", "shown"),
    [
        ({"role": "button", "name": "Send"}, 'role=button[name="Send"]'),
        ({"role": "button", "name": "Send", "exact": True}, 'role=button[name="Send"][exact]'),
        ({"role": "heading", "level": 2}, "role=heading[level=2]"),
        ({"role": "checkbox", "checked": False}, "role=checkbox[checked=false]"),
        ({"label": "Email"}, 'label="Email"'),
        ({"text": "Sign in", "within": "#nav", "nth": 1}, '#nav >> text="Sign in" >> nth=1'),
        ({"test_id": "go", "within": {"role": "dialog"}}, 'role=dialog >> test_id="go"'),
        ({"css": "li.item", "nth": -1}, "li.item >> nth=-1"),
    ],
)
def test_a_locator_reads_like_a_selector(selector: dict[str, object], shown: str) -> None:
    spec = LocatorSpec.model_validate(selector)
    assert selector_text(spec) == shown == str(spec) == repr(spec)


def _problems(selector: str) -> list[str]:
    body = f"""name: t
version: 1.0.0
steps:
  - action: navigate
    url: http://127.0.0.1/
  - action: click
    selector: {selector}
"""
    with pytest.raises(TemplateInvalid) as caught:
        load_template_text(body)
    return caught.value.problems


@pytest.mark.parametrize(
    ("selector", "message"),
    [
        ("{role: buton, name: Send}", "unknown ARIA role 'buton' (did you mean 'button'?)"),
        ("{role: knob}", "unknown ARIA role 'knob' (valid roles: alert, alertdialog,"),
        ('{role: button, name: ""}', "name: must not be empty (leave it out to match any element of the role)"),
        ("{rol: button}", "unknown key 'rol' in a locator (did you mean 'role'?)"),
        ("{name: Send}", "a locator needs exactly one of role, label, text, placeholder, test_id, alt, title, css"),
        ("{label: Email, text: Email}", "a locator needs exactly one of role, label, text, placeholder, test_id, "
                                        "alt, title, css; got label, text"),
        ("{label: Email, name: Email}", "name only applies together with role (to find by visible text, use text:)"),
        ("{test_id: go, exact: true}", "exact does not apply to test_id (it always matches exactly)"),
        ("{text: Go, nth: first}", "nth must be an integer (0 is the first match, -1 the last) or a ${param}"),
        ("{text: Go, nth: 20000}", "nth must be between -1 (the last match) and 10000, got 20000"),
        ("{text: Go, within: {rolee: form}}", "within: unknown key 'rolee' in a locator (did you mean 'role'?)"),
        ("{text: Go, exact: maybe}", "exact: expected true or false"),
        ("[a, b]", "a selector is a string (CSS, text=, xpath=) or a locator mapping such as "
                   "{role: button, name: Send}, got a list"),
        ("{label: ''}", "label: must not be empty"),
    ],
)
def test_a_bad_locator_is_refused_at_load_naming_the_step(selector: str, message: str) -> None:
    problems = _problems(selector)
    assert len(problems) == 1, problems
    assert problems[0].startswith("line 7: steps[1].selector: "), problems
    assert message in problems[0], problems


def test_references_and_lengths_inside_a_locator_are_checked_at_load() -> None:
    problems = _problems('{role: button, name: "${who}"}')
    assert problems == ["line 7: steps[1].selector.name: ${who} refers to nothing: 'who' is not a declared "
                        "param (declared: none)"]
    with pytest.raises(TemplateInvalid) as caught:
        load_template_text(
            f"name: t\nversion: 1.0.0\nsteps:\n  - action: click\n    selector: {{text: {'x' * 40}}}\n",
            max_selector_length=30,
        )
    assert caught.value.problems == [
        "line 5: steps[0].selector: selector is 47 characters long; the limit is 30 (max_selector_length)"
    ]


def test_every_selector_field_takes_a_locator() -> None:
    loaded = template("""
        session:
          check: {role: button, name: Log out}
          login: [{action: click, selector: {role: button, name: Log in}}]
        steps:
          - action: navigate
            url: http://127.0.0.1/
          - {action: assert, text: Hello, within: {role: main}}
          - {action: extract, selector: {role: listitem}, into: rows,
             fields: {title: {selector: {role: heading}}, link: {selector: {role: link}, attr: href}}}
          - {action: click, selector: {text: Buy}, side_effect: true,
             postcondition: {selector: {role: status, name: Bought}}}
          - repeat:
              max: 3
              until_missing: {role: link, name: Next}
              steps: [{action: click, selector: {role: link, name: Next}}]
        """)
    steps = loaded.template.steps
    assert isinstance(loaded.template.session.check, LocatorSpec)  # type: ignore[union-attr]
    assert str(steps[1].within) == "role=main"  # type: ignore[union-attr]
    assert str(steps[2].fields["link"].selector) == "role=link"  # type: ignore[union-attr]
    assert str(steps[3].postcondition.selector) == 'role=status[name="Bought"]'  # type: ignore[union-attr]
    assert str(steps[4].repeat.until_missing) == 'role=link[name="Next"]'  # type: ignore[union-attr]


# --- on a real page ------------------------------------------------------------------------------
LOCATED = [
    ({"role": "button", "name": "Send"}, "Send"),
    ({"role": "textbox", "name": "Full name"}, "full"),
    ({"label": "Email"}, "email"),
    ({"label": "Country", "exact": True}, "country"),
    ({"text": "Subscribe to news"}, "Subscribe to news"),
    ({"placeholder": "Your message"}, "message"),
    ({"test_id": "country-select"}, "country"),
    ({"alt": "Company logo"}, "IMG"),
    ({"title": "Get help"}, "Help"),
    ({"role": "button", "name": "Delete", "nth": 1}, "deleted beta"),
    ({"role": "button", "name": "Delete", "nth": -1}, "deleted beta"),
    ({"role": "button", "name": "Delete", "within": "#row-1"}, "deleted alpha"),
    ({"role": "button", "name": "Delete", "within": {"text": "Beta"}}, "deleted beta"),
    ({"css": "#rows button", "nth": 0}, "deleted alpha"),
    ("#rows >> text=Beta", "row-2"),
]
#: Which element a locator found: its id, name, the echo its onclick writes, or its text.
_WHO = """(els) => els.map((e) => e.id || e.getAttribute('name')
  || (e.getAttribute('onclick') || '').replace(/^echo\\('(.*)'\\)$/, '$1') || (e.tagName === 'IMG' ? 'IMG' : '')
  || e.textContent.trim())"""


def test_each_locator_form_finds_the_right_element(chromium: Chromium, form_url: str) -> None:
    async def act(page: Page) -> list[list[str]]:
        await page.goto(form_url)
        return [await to_locator(page, LocatorSpec.model_validate(s) if isinstance(s, dict) else s)
                .evaluate_all(_WHO) for s, _ in LOCATED]

    found = chromium.on_page(act)
    for (selector, expected), who in zip(LOCATED, found, strict=True):
        assert who == [expected], (selector, who)


def test_a_template_drives_the_form_with_locators(sqlite_runtime: Runtime, form_url: str) -> None:
    loaded = template(f"""
        params:
          who: {{type: string, default: Ada}}
          field: {{type: string, default: Full name}}
          row: {{type: int, default: 1}}
        steps:
          - {{action: navigate, url: "{form_url}"}}
          - {{action: assert, selector: {{role: heading, name: Contact us}}}}
          - {{action: fill, selector: {{label: "${{field}}", exact: true}}, value: "${{who}}"}}
          - {{action: fill, selector: {{placeholder: you@example.com}}, value: ada@example.com}}
          - {{action: select, selector: {{test_id: country-select}}, value: jp}}
          - {{action: check, selector: {{role: checkbox, name: Subscribe}}}}
          - {{action: type, selector: {{role: textbox, name: Your message}}, text: Hi}}
          - {{action: click, selector: {{role: button, name: Nowhere}}, optional: true}}
          - {{action: click, selector: {{role: button, name: Send, exact: true}}}}
          - {{action: get, selector: "#echo", into: sent}}
          - {{action: click, selector: {{role: button, name: Delete, nth: "${{row}}"}}}}
          - {{action: get, selector: {{css: "#echo"}}, into: deleted}}
          - {{action: click, selector: {{role: button, name: "Pay $${{amount}}"}}}}
          - {{action: get, selector: {{css: "#echo"}}, into: paid}}
          - {{action: get, what: count, selector: {{role: button, name: Delete}}, into: deletes}}
          - {{action: get, what: attribute, selector: {{title: Get help}}, attribute: href, into: help}}
          - {{action: extract, selector: {{role: listitem}}, into: rows,
              fields: {{button: {{selector: {{role: button}}}}}}}}
        """)
    outcome = sqlite_runtime.run_loaded(loaded)
    assert outcome.status == "completed", outcome
    out = outcome.outputs
    assert json.loads(out["sent"]) == {"name": "Ada", "email": "ada@example.com", "country": "jp",
                                       "subscribe": "on", "message": "Hi"}
    assert (out["deleted"], out["paid"], out["deletes"], out["help"]) == ("deleted beta", "paid", 2, "#help")
    assert out["rows"] == [{"button": "Delete"}, {"button": "Delete"}]
    steps = sqlite_runtime.store.steps.steps(outcome.run_id)
    assert [s.status for s in steps if s.step_path == "7"] == ["skipped"]  # optional: present() said no


def test_a_missing_locator_fails_readably(sqlite_runtime: Runtime, form_url: str) -> None:
    loaded = template(f"""
        settings: {{step_retries: 0}}
        steps:
          - {{action: navigate, url: "{form_url}"}}
          - {{action: click, selector: {{role: button, name: Nowhere}}, timeout_s: 1}}
        """)
    outcome = sqlite_runtime.run_loaded(loaded)
    assert (outcome.status, outcome.error_code) == ("failed", "SELECTOR_NOT_FOUND"), outcome
    assert 'nothing matches role=button[name="Nowhere"]' in (outcome.error_message or "")
    asserted = sqlite_runtime.run_loaded(template(f"""
        steps:
          - {{action: navigate, url: "{form_url}"}}
          - {{action: assert, selector: {{label: Phone}}, timeout_s: 1}}
        """))
    assert (asserted.status, asserted.error_code) == ("failed", "ASSERTION_FAILED")
    assert 'expected label="Phone" to be present' in (asserted.error_message or "")


def test_a_locator_built_from_params_is_checked_when_it_is_rendered(sqlite_runtime: Runtime, form_url: str) -> None:
    loaded = template(f"""
        params:
          role: {{type: string, default: buton}}
        steps:
          - {{action: navigate, url: "{form_url}"}}
          - {{action: click, selector: {{role: "${{role}}", name: Send}}}}
        """)
    outcome = sqlite_runtime.run_loaded(loaded)
    assert (outcome.status, outcome.error_code) == ("failed", "INVALID_STEP_INPUT"), outcome
    assert "unknown ARIA role 'buton' (did you mean 'button'?)" in (outcome.error_message or "")


def test_a_repeat_stops_on_a_locator(sqlite_runtime: Runtime) -> None:
    """``while_present`` asks the shared presence check, which takes the mapping form too."""
    page = """<!doctype html><ul>""" + "".join(
        f"<li>{n} <button onclick='this.parentElement.remove()'>Remove</button></li>" for n in range(3)
    ) + "</ul>"
    with serve_http(html_pages({"/list": page})) as host:
        outcome = sqlite_runtime.run_loaded(template(f"""
            steps:
              - {{action: navigate, url: "http://{host}/list"}}
              - repeat:
                  max: 10
                  while_present: {{role: button, name: Remove}}
                  steps: [{{action: click, selector: {{role: button, name: Remove}}}}]
              - {{action: get, what: count, selector: {{role: listitem}}, into: left}}
            """))
    assert outcome.status == "completed", outcome
    assert outcome.outputs["left"] == 0
    clicks = [s for s in sqlite_runtime.store.steps.steps(outcome.run_id) if s.action == "click"]
    assert len(clicks) == 3 and all(s.status == "succeeded" for s in clicks)


#: Logged in (in localStorage) it shows "Log out" and the secret link; the runner goes back to
#: the page after the login steps, so the login must outlive the page.
SESSION_PAGE = """<!doctype html>
<button onclick="localStorage.setItem('in', '1'); location.reload()">Log in</button>
<script>
  if (localStorage.getItem('in')) {
    document.body.insertAdjacentHTML('beforeend', '<button>Log out</button><a href="#secret">Secret</a>');
  }
</script>"""


def test_a_session_check_written_as_a_locator_logs_in_again(sqlite_runtime: Runtime) -> None:
    with serve_http(html_pages({"/app": SESSION_PAGE})) as host:
        outcome = sqlite_runtime.run_loaded(template(f"""
            settings: {{step_retries: 0}}
            session:
              check: {{role: button, name: Log out}}
              login: [{{action: click, selector: {{role: button, name: Log in}}}}]
            steps:
              - {{action: navigate, url: "http://{host}/app"}}
              - {{action: click, selector: {{role: link, name: Secret}}, timeout_s: 1}}
              - {{action: get, what: url, into: url}}
            """))
    assert outcome.status == "completed", outcome
    assert outcome.outputs["url"].endswith("#secret")
    logins = [s for s in sqlite_runtime.store.steps.steps(outcome.run_id) if "~login" in s.step_path]
    assert [s.status for s in logins] == ["succeeded"]
