"""Every static check: the problem text, where it points, and that all problems come at once."""

from __future__ import annotations

import pytest

HEAD = """\
name: demo
version: 1.0.0
"""


def one(found: list[str]) -> str:
    assert len(found) == 1, found
    return found[0]


# 1. malformed YAML -----------------------------------------------------------------------------


def test_malformed_yaml_reports_line_and_column(problems) -> None:
    found = one(problems(HEAD + "steps:\n  - action: click\n    selector: [a\n"))
    assert found.startswith("line 6, column 1: invalid YAML:"), found


def test_bad_indentation_reports_its_line(problems) -> None:
    found = one(problems(HEAD + "steps:\n  - action: click\n     selector: a\n"))
    assert found.startswith("line 5, column 14: invalid YAML: mapping values are not allowed")


def test_several_documents_are_refused(problems) -> None:
    found = one(problems(HEAD + "steps: []\n---\nname: other\n"))
    assert "line 4" in found and "expected a single document" in found


def test_recursive_alias_is_refused(problems) -> None:
    assert "alias refers to itself" in one(problems("a: &x [*x]\n"))


def test_duplicate_yaml_key_is_reported(problems) -> None:
    found = one(
        problems(
            HEAD + "steps:\n  - action: navigate\n    url: https://a.example/\n"
            "    url: https://b.example/\n"
        )
    )
    assert found == (
        "line 6: steps[0]: key 'url' appears twice (first at line 5); "
        "YAML would silently keep only the last one"
    )


# 2. top level ----------------------------------------------------------------------------------


def test_top_level_must_be_a_mapping(problems) -> None:
    assert one(problems("- a\n- b\n")) == (
        "line 1: the top level must be a mapping with name, version and steps, got a list"
    )
    assert "template is empty" in one(problems("# nothing\n"))


def test_missing_name_version_and_steps_are_all_reported(problems) -> None:
    found = problems("description: nothing else\n")
    assert found == [
        "line 1: missing required field 'name'",
        "line 1: missing required field 'steps'",
        "line 1: missing required field 'version'",
    ]


@pytest.mark.parametrize(
    ("version", "shown"),
    [
        ("1.2", "got 1.2 (quote it in YAML)"),
        ('"1.2"', "got '1.2'"),
        ('"1.02.0"', "got '1.02.0'"),
        ('"v1.0.0"', "got 'v1.0.0'"),
        ("1", "got 1 (quote it in YAML)"),
    ],
)
def test_bad_semver(problems, version, shown) -> None:
    found = one(
        problems(f"name: demo\nversion: {version}\nsteps:\n  - {{action: check, selector: a}}\n")
    )
    assert found.startswith("line 2: version: version must be a semantic version MAJOR.MINOR.PATCH")
    assert found.endswith(shown)


def test_bad_name_and_unknown_top_level_key(problems) -> None:
    found = problems(
        "name: My Template\nversion: 1.0.0\nstep: []\nsteps:\n  - {action: check, selector: a}\n"
    )
    assert found[0].startswith("line 1: name: name 'My Template' must be lower-case letters")
    assert found[1] == (
        "line 3: unknown field 'step' (did you mean 'steps'?); allowed fields: name, version, "
        "description, params, settings, steps, session, handoff"
    )


def test_empty_steps(problems) -> None:
    assert one(problems(HEAD + "steps: []\n")) == "line 3: steps: must not be empty"


# 3. actions and fields -------------------------------------------------------------------------


def test_unknown_action_in_nested_repeat_names_line_and_valid_actions(problems) -> None:
    text = (
        HEAD
        + """\
steps:
  - action: navigate
    url: https://a.example/
  - repeat:
      max: 3
      steps:
        - action: clik
          selector: a
"""
    )
    assert one(problems(text)) == (
        "line 9: steps[1].repeat.steps[0]: unknown action 'clik' (did you mean 'click'?); "
        "valid actions: assert, check, click, close_tab, download, eval, extract, fill, get, go_back, handoff, hover, "
        "list_tabs, navigate, new_tab, press, screenshot, scroll, select, switch_tab, type, uncheck, upload, wait"
    )


def test_missing_action(problems) -> None:
    found = one(problems(HEAD + "steps:\n  - selector: a\n"))
    assert found.startswith(
        "line 4: steps[0]: step has no 'action' (or 'repeat'); valid actions: assert,"
    )
    found = one(problems(HEAD + "steps:\n  - just a string\n"))
    assert (
        found == "line 4: steps[0]: a step must be a mapping with an 'action' key, "
        "got a string 'just a string'"
    )


def test_unknown_field_names_allowed_fields(problems) -> None:
    found = one(problems(HEAD + "steps:\n  - action: hover\n    selector: a\n    delay: 5\n"))
    assert found == (
        "line 6: steps[0]: unknown field 'delay' for action 'hover'; allowed fields: selector "
        "(and the common id, optional, timeout_s, retries, description, continue_on_error, "
            "checkpoint, side_effect, postcondition, on_unknown, dialog, when)"
    )


def test_missing_required_field_and_bad_literal(problems) -> None:
    found = problems(HEAD + "steps:\n  - action: click\n    button: top\n")
    assert found == [
        "line 4: steps[0]: missing required field 'selector' for action 'click'",
        "line 5: steps[0].button: invalid value 'top'; valid values: left, right, middle",
    ]


def test_repeat_step_cannot_have_an_action(problems) -> None:
    found = one(
        problems(
            HEAD + "steps:\n  - action: click\n"
            "    repeat: {max: 2, steps: [{action: check, selector: a}]}\n"
        )
    )
    assert found == (
        "line 4: steps[0]: a step has either 'action' or 'repeat', not both; "
        "put actions in repeat.steps"
    )


@pytest.mark.parametrize(
    ("step", "message"),
    [
        (
            "{action: scroll, pixels: 10, to: top}",
            "scroll needs exactly one of pixels, selector, to; got pixels, to",
        ),
        ("{action: scroll}", "scroll needs exactly one of pixels, selector, to"),
        (
            "{action: wait, ms: 5, url: '**/x'}",
            "wait needs exactly one of selector, url, load_state, ms; got url, ms",
        ),
        (
            "{action: assert, text: a, exists: false}",
            "assert: exists only applies together with selector",
        ),
        (
            "{action: wait, url: '**/x', state: hidden}",
            "wait: state only applies together with selector",
        ),
        (
            "{action: assert, text: a, url: b}",
            "assert needs exactly one of selector, text, url; got text, url",
        ),
        (
            "{action: assert, url: b, within: main}",
            "assert: within only applies together with text",
        ),
        ("{action: get, what: text, into: t}", "get: what: text needs a selector"),
        ("{action: get, what: title, selector: h1, into: t}", "get: what: title takes no selector"),
        (
            "{action: get, what: attribute, selector: a, into: t}",
            "get: what: attribute needs an attribute name",
        ),
        (
            "{action: screenshot, full_page: true, selector: a}",
            "screenshot: full_page cannot be combined with selector",
        ),
        (
            "{action: extract, selector: a, into: 2bad}",
            "into name '2bad' must be letters, digits and '_'",
        ),
        ("{action: select, selector: a, value: {x: 1}}", "expected a string or a list of strings"),
        (
            "{action: repeat, selector: a}",
            "'repeat' is not an action; write a repeat as '- repeat:",
        ),
        (
            (
                "{repeat: {max: 2, until_missing: a, while_present: b, "
                "steps: [{action: hover, selector: a}]}}"
            ),
            "repeat takes at most one of until_missing and while_present",
        ),
        ("{action: wait, ms: 700000}", "must be at most 600000, got 700000"),
        ("{action: click, selector: a, retries: 11}", "must be at most 10, got 11"),
        ("{action: click, selector: ''}", "must not be empty"),
        ("{action: click, selector: a, id: 'has space'}", "step id 'has space' must be letters"),
    ],
)
def test_per_step_rules(problems, step, message) -> None:
    found = one(problems(HEAD + f"steps:\n  - {step}\n"))
    assert found.startswith("line 4: steps[0]"), found
    assert message in found


def test_no_pydantic_noise(problems) -> None:
    found = problems(
        HEAD
        + "settings: 5\nparams: {a: 3}\nsteps:\n  - {action: click, selector: a, optional: maybe}\n"
    )
    text = "\n".join(found)
    assert "pydantic" not in text and "Input should be" not in text and "Value error" not in text
    assert "line 3: settings: expected a mapping, got a number 5" in found
    assert "line 4: params.a: expected a mapping, got a number 3" in found
    assert "line 6: steps[0].optional: expected true or false, got a string 'maybe'" in found


# 4. duplicate ids ------------------------------------------------------------------------------


def test_duplicate_ids_name_both_places(problems) -> None:
    text = (
        HEAD
        + """\
steps:
  - id: open
    action: navigate
    url: https://a.example/
  - repeat:
      max: 2
      steps:
        - id: open
          action: click
          selector: a
"""
    )
    assert one(problems(text)) == (
        "line 10: steps[1].repeat.steps[0].id: duplicate step id 'open' "
        "(also used at steps[0], line 4)"
    )


# 5. references ---------------------------------------------------------------------------------


def test_reference_to_undeclared_param(problems) -> None:
    text = (
        HEAD
        + "params:\n  start_url: {type: url}\nsteps:\n  - {action: navigate, url: '${start_ur}'}\n"
    )
    assert one(problems(text)) == (
        "line 6: steps[0].url: ${start_ur} refers to nothing: 'start_ur' is not a declared param "
        "(declared: start_url) (did you mean 'start_url'?)"
    )


def test_outputs_must_be_produced_earlier_in_document_order(problems) -> None:
    text = (
        HEAD
        + """\
steps:
  - {action: fill, selector: a, value: "${outputs.title}"}
  - {action: get, what: title, into: title}
  - {action: fill, selector: a, value: "${outputs.title} / ${outputs.title.0}"}
"""
    )
    assert one(problems(text)) == (
        "line 4: steps[0].value: ${outputs.title} refers to nothing: no earlier step stores into "
        "'title' (earlier outputs: none)"
    )


def test_outputs_inside_and_after_repeat(load, problems) -> None:
    ok = (
        HEAD
        + """\
steps:
  - repeat:
      max: 3
      steps:
        - {action: extract, selector: .q, into: quotes}
        - {action: fill, selector: a, value: "${outputs.quotes.0} #${loop.iteration} ${loop.index}"}
  - {action: fill, selector: a, value: "${outputs.quotes} ${run.id}"}
"""
    )
    load(ok)
    bad = (
        HEAD
        + """\
steps:
  - repeat:
      max: 3
      steps:
        - {action: fill, selector: a, value: "${outputs.later}"}
        - {action: extract, selector: .q, into: later}
  - {action: fill, selector: a, value: "${loop.index} ${run.name} ${loop.count}"}
"""
    )
    found = problems(bad)
    assert found == [
        (
            "line 7: steps[0].repeat.steps[0].value: ${outputs.later} refers to nothing: no "
            "earlier step stores into 'later' (earlier outputs: none)"
        ),
        "line 9: steps[1].value: ${loop.count} can only be used inside a repeat",
        "line 9: steps[1].value: ${loop.index} can only be used inside a repeat",
        "line 9: steps[1].value: ${run.name} is unknown; use ${run.id} or ${run.attempt}",
    ]


def test_step_descriptions_are_checked_and_run_attempt_exists(load, problems) -> None:
    load(HEAD + "steps:\n  - {action: check, selector: a, description: 'try ${run.attempt}'}\n")
    found = one(problems(HEAD + "steps:\n  - {action: check, selector: a, description: '${x}'}\n"))
    assert found.startswith("line 4: steps[0].description: ${x} refers to nothing")


def test_malformed_and_escaped_references(load, problems) -> None:
    load(HEAD + "steps:\n  - {action: fill, selector: a, value: 'costs $${price}'}\n")
    found = one(problems(HEAD + "steps:\n  - {action: fill, selector: a, value: 'x ${a b}'}\n"))
    assert (
        found == "line 4: steps[0].value: '${a b}' is not a valid reference "
        "(expected ${name} or ${a.b.c})"
    )
    found = one(problems(HEAD + "steps:\n  - {action: fill, selector: a, value: 'x ${oops'}\n"))
    assert "without a closing" in found


def test_reference_into_scalar_param_and_list_index(load, problems) -> None:
    head = HEAD + "params:\n  n: {type: int}\n  tags: {type: list}\n"
    load(head + "steps:\n  - {action: fill, selector: a, value: '${tags.0}'}\n")
    found = one(problems(head + "steps:\n  - {action: fill, selector: a, value: '${n.x}'}\n"))
    assert (
        found == "line 7: steps[0].value: ${n.x} reads into param 'n' (int), which has no such part"
    )


def test_param_names_are_checked(problems) -> None:
    found = problems(
        HEAD + "params:\n  outputs: {type: string}\n  bad-name: {type: string}\n"
        "steps:\n  - {action: check, selector: a}\n"
    )
    assert found == [
        (
            "line 4: params.outputs: param name 'outputs' is reserved "
            "(outputs, loop and run are scopes)"
        ),
        (
            "line 5: params.bad-name: param name 'bad-name' must be letters, digits and '_' "
            "(not starting with a digit)"
        ),
    ]


# 6. literal URLs -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "scheme"),
    [
        ("file:///etc/passwd", "file"),
        ("javascript:alert(1)", "javascript"),
        ("data:text/html,<b>x</b>", "data"),
        ("ftp://quotes.example/", "ftp"),
        ("FILE:///etc/passwd", "file"),
        ("file:///${path}", "file"),
    ],
)
def test_navigate_url_scheme(problems, url, scheme) -> None:
    text = (
        HEAD
        + f"params:\n  path: {{type: string}}\nsteps:\n  - action: navigate\n    url: '{url}'\n"
    )
    assert one(problems(text)).startswith(
        f"line 7: steps[0].url: URL scheme '{scheme}:' is not allowed (only http and https are): "
    )


def test_navigate_host_outside_allowed_domains(load, problems) -> None:
    head = (
        HEAD
        + "params:\n  p: {type: string}\nsettings:\n  allowed_domains: [quotes.example]\nsteps:\n"
    )
    load(head + "  - {action: navigate, url: 'https://www.quotes.example/page/${p}'}\n")
    load(head + "  - {action: navigate, url: '${p}'}\n")  # dynamic: checked at run time
    found = one(problems(head + "  - {action: navigate, url: 'https://evilquotes.example/${p}'}\n"))
    assert found == (
        "line 8: steps[0].url: host 'evilquotes.example' is not in allowed_domains (quotes.example)"
    )


def test_url_param_default(problems) -> None:
    text = (
        HEAD
        + """\
params:
  home: {type: url, default: "https://evil.example/"}
  local: {type: url, default: "file:///tmp/x"}
settings: {allowed_domains: [quotes.example, 127.0.0.1]}
steps:
  - {action: navigate, url: "${home}"}
"""
    )
    assert problems(text) == [
        (
            "line 4: params.home.default: default URL: host 'evil.example' is not in "
            "allowed_domains (quotes.example, 127.0.0.1)"
        ),
        (
            "line 5: params.local: default 'file:///tmp/x' is invalid: URL scheme 'file:' is not "
            "allowed (only http and https are): 'file:///tmp/x'"
        ),
    ]


def test_allowed_domains_entries_must_be_hosts(problems) -> None:
    found = one(
        problems(
            HEAD + "settings: {allowed_domains: ['https://q.example/']}\n"
            "steps:\n  - {action: check, selector: a}\n"
        )
    )
    assert found.startswith(
        "line 3: settings.allowed_domains[0]: allowed_domains entry 'https://q.example/'"
    )


# 7. screenshot names ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("/etc/passwd", "is absolute"),
        ("../x.png", "contains '..'"),
        ("a/../../x.png", "contains '..'"),
        ("C:x.png", "drive letter"),
        ("a\\\\b.png", "backslash"),
        ("''", "is empty"),
        ("dir/", "does not name a file"),
    ],
)
def test_screenshot_name_must_stay_in_artifact_dir(problems, name, message) -> None:
    found = one(problems(HEAD + f"steps:\n  - action: screenshot\n    name: {name}\n"))
    assert found.startswith("line 5: steps[0].name: artifact name"), found
    assert message in found


def test_good_screenshot_names(load) -> None:
    load(
        HEAD + "steps:\n  - {action: screenshot, name: 'shots/page-${run.id}.png'}\n"
        "  - {action: screenshot, name: a.b..png}\n"
    )


# 8. selector length ----------------------------------------------------------------------------


def test_selector_length_limit_applies_to_every_selector_field(problems, load) -> None:
    long = "a" * 31
    text = (
        HEAD
        + f"""\
steps:
  - {{action: click, selector: {long}}}
  - {{action: assert, text: x, within: {long}}}
  - action: extract
    selector: b
    into: r
    fields: {{x: {long}, y: {{selector: {long}, attr: href}}}}
  - repeat: {{max: 2, until_missing: {long}, steps: [{{action: hover, selector: b}}]}}
  - repeat: {{max: 2, while_present: {long}, steps: [{{action: hover, selector: b}}]}}
"""
    )
    found = problems(text, max_selector_length=30)
    suffix = ": selector is 31 characters long; the limit is 30 (max_selector_length)"
    assert found == [
        f"line 4: steps[0].selector{suffix}",
        f"line 5: steps[1].within{suffix}",
        f"line 9: steps[2].fields.x{suffix}",
        f"line 9: steps[2].fields.y.selector{suffix}",
        f"line 10: steps[3].repeat.until_missing{suffix}",
        f"line 11: steps[4].repeat.while_present{suffix}",
    ]
    load(text, max_selector_length=31)


# 9. unbounded repeats --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("params", "max_", "message"),
    [
        ("", "0", "repeat max must be at least 1, got 0"),
        ("", "-3", "repeat max must be at least 1, got -3"),
        ("", "1001", "repeat max 1001 is above the limit 1000 (max_repeat)"),
        ("", "'${n}'", "repeat max ${n} is unbounded: there is no param 'n'"),
        (
            "n: {type: int}",
            "'${n}'",
            "repeat max ${n} is unbounded: param 'n' declares no max (add max: N with N <= 1000)",
        ),
        (
            "n: {type: int, max: 5000}",
            "'${n}'",
            "repeat max ${n} is unbounded: param 'n' allows up to 5000, above the limit 1000",
        ),
        (
            "n: {type: float, max: 5}",
            "'${n}'",
            "repeat max ${n} is unbounded: param 'n' is 'float', not int",
        ),
        (
            "",
            "'${outputs.count}'",
            "is unbounded: it must be an integer 1..1000 or exactly ${param}",
        ),
        ("n: {type: int, max: 5}", "'${n} pages'", "is unbounded: it must be an integer"),
        ("", "true", "repeat max must be an integer or a ${param} reference, got True"),
        ("", "[3]", "repeat max must be an integer or a ${param} reference, got [3]"),
    ],
)
def test_unbounded_repeat(problems, params, max_, message) -> None:
    head = HEAD + (f"params:\n  {params}\n" if params else "params: {}\n")
    text = (
        head
        + f"steps:\n  - repeat:\n      max: {max_}\n      steps: [{{action: hover, selector: a}}]\n"
    )
    found = one(problems(text))
    line = 7 if params else 6
    assert found.startswith(f"line {line}: steps[0].repeat.max: "), found
    assert message in found


def test_repeat_without_max_is_unbounded(problems) -> None:
    found = one(
        problems(HEAD + "steps:\n  - repeat:\n      steps: [{action: hover, selector: a}]\n")
    )
    assert found == (
        "line 4: steps[0].repeat: repeat has no max, so it would be unbounded; give max: an "
        "integer 1..1000 or ${param} of an int param that declares a max"
    )


def test_repeat_bound_respects_configured_limit(load, problems) -> None:
    text = (
        HEAD + "params:\n  n: {type: int, max: 20}\nsteps:\n"
        "  - repeat: {max: '${n}', steps: [{action: hover, selector: a}]}\n"
    )
    load(text)
    assert "allows up to 20, above the limit 10" in one(problems(text, max_repeat=10))


# 10. eval --------------------------------------------------------------------------------------


def test_eval_needs_allow_eval(load, problems) -> None:
    step = "steps:\n  - {action: eval, expression: document.title, into: t}\n"
    assert one(problems(HEAD + step)) == (
        "line 4: steps[0]: eval steps are disabled; set settings.allow_eval: true to run JavaScript"
    )
    assert "eval steps are disabled" in one(
        problems(HEAD + "settings: {allow_eval: false}\n" + step)
    )
    load(HEAD + "settings: {allow_eval: true}\n" + step)


# 11. param specs -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (
            "{type: strng}",
            (
                "params.p.type: unknown param type 'strng'; valid types: bool, email, enum, file, "
                "float, int, list, secret, string, url"
            ),
        ),
        (
            "{type: int, default: 99, max: 50}",
            "params.p: default 99 is invalid: 99 is above the maximum 50",
        ),
        (
            "{type: int, default: abc}",
            "params.p: default 'abc' is invalid: expected an integer, got 'abc'",
        ),
        (
            "{type: enum, choices: [a, b], default: c}",
            "params.p: default 'c' is invalid: 'c' is not one of: a, b",
        ),
        (
            "{type: string, pattern: '^[a-z]+$', default: ABC}",
            "params.p: default 'ABC' is invalid: 'ABC' does not match pattern ^[a-z]+$",
        ),
        ("{type: int, min: 10, max: 5}", "params.p: min 10 is greater than max 5"),
        (
            "{type: string, pattern: '([a-z'}",
            "params.p: invalid regex pattern '([a-z': missing ]: [a-z (template regexes use RE2 syntax",
        ),
        ("{type: enum}", "params.p: an enum param needs a non-empty choices list"),
        ("{type: enum, choices: []}", "params.p: an enum param needs a non-empty choices list"),
        ("{type: string, choices: [a]}", "params.p: choices only apply to enum params"),
        ("{type: string, min: 1}", "params.p: min/max only apply to int, float and list params"),
        ("{type: int, pattern: x}", "params.p: pattern only applies to string and secret params"),
        ("{type: string, items: int}", "params.p: items only applies to list params"),
        (
            "{type: list, items: dict}",
            "params.p.items: invalid value 'dict'; valid values: bool, float, int, string",
        ),
        ("{type: secret, default: hunter2}", "params.p: a secret param cannot have a default"),
        (
            "{type: int, required: true, default: 3}",
            "params.p: a required param cannot have a default",
        ),
        ("{type: int, max: lots}", "params.p.max: expected a number, got 'lots'"),
        (
            "{type: int, requird: true}",
            "params.p: unknown field 'requird' (did you mean 'required'?)",
        ),
    ],
)
def test_param_spec_problems(problems, spec, message) -> None:
    found = one(
        problems(HEAD + f"params:\n  p: {spec}\nsteps:\n  - {{action: check, selector: a}}\n")
    )
    assert found.startswith("line 4: "), found
    assert message in found, found


def test_param_defaults_are_coerced(load) -> None:
    t = load(
        HEAD
        + "params:\n  n: {type: int, default: '4'}\n  l: {type: list, items: int, default: '1,2'}\n"
        "steps:\n  - {action: check, selector: a}\n"
    ).template
    assert t.params["n"].default == 4 and t.params["l"].default == [1, 2]


# all problems at once --------------------------------------------------------------------------


def test_all_problems_are_collected_in_line_order(problems) -> None:
    text = """\
name: Demo
version: 1.0
params:
  n: {type: nope}
steps:
  - {action: navigate, url: "file:///x"}
  - {action: clik, selector: a}
  - {action: eval, expression: "1"}
  - {action: fill, selector: a, value: "${missing}"}
"""
    found = problems(text)
    assert [p.split(":")[0] for p in found] == [
        "line 1",
        "line 2",
        "line 4",
        "line 6",
        "line 7",
        "line 8",
        "line 9",
    ]
