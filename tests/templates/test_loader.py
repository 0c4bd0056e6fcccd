"""A valid template loads into the documented model."""

from __future__ import annotations

import hashlib

import pytest
from pydantic import ValidationError

from browserq.errors import TemplateInvalid, TemplateNotFound
from browserq.templates import (
    ACTIONS,
    ExtractStep,
    FieldSpec,
    FillStep,
    NavigateStep,
    RepeatStep,
    SelectStep,
    Template,
    load_template_file,
    load_template_text,
)

QUOTES = """\
name: quotes
version: 1.2.0
description: Scrape quotes across pages
params:
  start_url: {type: url, required: true}
  max_pages: {type: int, default: 3, min: 1, max: 50}
  username:  {type: string, pattern: "^[a-z0-9_]+$"}
  password:  {type: secret}
  mode: {type: enum, choices: [fast, slow], default: fast}
  tags: {type: list, items: string}
settings:
  timeout_s: 120
  step_timeout_s: 30
  allowed_domains: [quotes.example]
  trace: on_failure
  allow_eval: false
  step_retries: null
steps:
  - id: open
    action: navigate
    url: "${start_url}"
  - id: pages
    repeat:
      max: "${max_pages}"
      until_missing: "li.next a"
      steps:
        - action: extract
          selector: ".quote"
          fields: {text: ".text", author: ".author", tags: {selector: ".tag", all: true}}
          into: quotes
        - action: click
          selector: "li.next a"
          optional: true
"""


def test_brief_example_loads_with_types_and_defaults() -> None:
    loaded = load_template_text(QUOTES, "quotes.yaml")
    t = loaded.template
    assert isinstance(t, Template)
    assert (loaded.name, loaded.version, loaded.ref) == ("quotes", "1.2.0", "quotes@1.2.0")
    assert loaded.body == QUOTES
    assert loaded.content_hash == hashlib.sha256(QUOTES.encode()).hexdigest()
    assert loaded.source == "quotes.yaml"
    assert t.settings.allowed_domains == ["quotes.example"]
    assert t.settings.trace == "on_failure" and t.settings.step_retries is None
    assert t.params["max_pages"].default == 3 and t.params["max_pages"].max == 50
    open_step, pages = t.steps
    assert isinstance(open_step, NavigateStep) and open_step.wait_until == "load"
    assert isinstance(pages, RepeatStep) and pages.repeat.max == "${max_pages}"
    extract, click = pages.repeat.steps
    assert isinstance(extract, ExtractStep)
    # a bare string field is stored as a FieldSpec with that sub-selector
    assert extract.fields == {
        "text": FieldSpec(selector=".text"),
        "author": FieldSpec(selector=".author"),
        "tags": FieldSpec(selector=".tag", all=True),
    }
    assert click.optional is True and click.action == "click"
    assert [s.id for s in t.iter_steps()] == ["open", "pages", None, None]


def test_settings_defaults_and_yaml_quirks(load) -> None:
    t = load(
        """\
        name: x
        version: 0.1.0
        settings: {trace: off}
        steps:
          - {action: fill, selector: "#n", value: 42}
          - {action: fill, selector: "#b", value: yes}
          - {action: select, selector: "#s", value: [1, two]}
          - {action: press, key: 1}
        """
    ).template
    assert t.settings.trace == "off"  # YAML reads unquoted off as False
    assert t.settings.timeout_s == 120 and t.settings.step_timeout_s == 30
    assert t.settings.allow_eval is False and t.settings.allowed_domains == []
    fill_n, fill_b, select, press = t.steps
    assert isinstance(fill_n, FillStep) and fill_n.value == "42"
    assert fill_b.value == "true"
    assert isinstance(select, SelectStep) and select.value == ["1", "two"]
    assert press.key == "1"
    assert t.params == {}


def test_every_action_has_a_class_and_loads(load) -> None:
    assert sorted(ACTIONS) == [
        "assert",
        "check",
        "click",
        "close_tab",
        "download",
        "eval",
        "extract",
        "fill",
        "get",
        "go_back",
        "handoff",
        "hover",
        "list_tabs",
        "navigate",
        "new_tab",
        "press",
        "screenshot",
        "scroll",
        "select",
        "switch_tab",
        "type",
        "uncheck",
        "upload",
        "wait",
    ]
    t = load(
        """\
        name: all
        version: 1.0.0
        settings: {allow_eval: true}
        steps:
          - {action: navigate, url: "https://a.example/", wait_until: networkidle}
          - {action: click, selector: a, button: right, click_count: 2}
          - {action: fill, selector: a, value: v}
          - {action: type, selector: a, text: t, delay_ms: 5}
          - {action: select, selector: a, value: x, by: label}
          - {action: check, selector: a}
          - {action: uncheck, selector: a}
          - {action: press, key: Enter, selector: a}
          - {action: hover, selector: a}
          - {action: scroll, to: bottom, settle_ms: 100}
          - {action: wait, selector: a, state: hidden}
          - {action: extract, selector: a, into: rows, limit: 3, allow_empty: true}
          - {action: get, what: attribute, selector: a, attribute: href, into: link}
          - {action: eval, expression: "1+1", into: two}
          - {action: screenshot, name: shots/a.png, selector: a}
          - {action: assert, text: hi, within: main, message: no greeting}
          - {action: go_back, wait_until: commit, into: back}
        """
    ).template
    names = "navigate click fill type select check uncheck press hover scroll wait extract get eval"
    expected = [ACTIONS[a] for a in (*names.split(), "screenshot", "assert", "go_back")]
    assert [type(s) for s in t.steps] == expected
    assert t.steps[10].state == "hidden" and t.steps[11].fields is None


def test_steps_survive_a_model_dump_round_trip(load) -> None:
    """The runner re-validates ``model_dump()`` output (defaults included) after rendering."""
    t = load(
        """\
        name: rt
        version: 1.0.0
        steps:
          - {action: wait, url: "**/done"}
          - {action: assert, text: hello}
          - {action: extract, selector: a, into: r, fields: {t: b}}
          - repeat: {max: 2, steps: [{action: scroll, to: bottom}]}
        """
    ).template
    for step in t.steps:
        for dump in (step.model_dump(), step.model_dump(exclude_none=True)):
            assert type(step).model_validate(dump) == step
    assert Template.model_validate(t.model_dump()) == t


def test_models_are_frozen(load) -> None:
    t = load(QUOTES).template
    with pytest.raises(ValidationError, match="frozen"):
        t.steps[0].url = "https://elsewhere.example/"  # type: ignore[misc]


def test_load_template_file_reports_path(tmp_path) -> None:
    good = tmp_path / "q.yaml"
    good.write_bytes(QUOTES.replace("\n", "\r\n").encode())
    loaded = load_template_file(good)
    assert loaded.source == str(good)
    assert loaded.body == QUOTES.replace("\n", "\r\n")  # the exact text, line endings included
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: [\n")
    with pytest.raises(TemplateInvalid) as info:
        load_template_file(bad)
    assert str(bad) in str(info.value)
    with pytest.raises(TemplateNotFound, match="does not exist"):
        load_template_file(tmp_path / "missing.yaml")
    binary = tmp_path / "bin.yaml"
    binary.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(TemplateInvalid, match="not UTF-8"):
        load_template_file(binary)
