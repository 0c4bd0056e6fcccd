"""``when:`` and blocks at template load, and the ``if`` expression language on its own."""

from __future__ import annotations

import time

import pytest

from browserq.execute.run_request import is_side_effect
from browserq.templates import BlockStep, ClickStep, RepeatStep, WhenSpec, render_step
from browserq.templates.expression import (
    MAX_DEPTH,
    MAX_EXPRESSION_LENGTH,
    MAX_TOKENS,
    ExpressionError,
    Name,
    parse_expression,
)
from browserq.templates.expression_eval import EvaluationError, evaluate, truthy

HEAD = """\
name: demo
version: 1.0.0
params:
  mode: {type: string, default: fast}
  tags: {type: list, items: string, default: [a, b]}
  n: {type: int, default: 3}
"""

SCOPE = {
    "params": {"mode": "fast", "n": 3, "tags": ["a", "b"], "empty": ""},
    "outputs": {"count": 0, "title": "Hello world", "rows": [{"t": "x"}], "seen": {"k": 1}},
    "run": {"id": "r1", "attempt": 2},
    "loop": {"index": 0, "iteration": 1},
}


def holds(text: str) -> bool:
    return evaluate(parse_expression(text), SCOPE)


def one(found: list[str]) -> str:
    assert len(found) == 1, found
    return found[0]


# --- the expression language ------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("true", True),
        ("false or null", False),
        ("not false and false", False),  # not binds tighter than and
        ("true or false and false", True),  # and binds tighter than or
        ("(true or false) and false", False),
        ("not 1 == 2", True),  # comparison binds tighter than not
        ("params.n > 2 and mode == 'fast'", True),  # params.x and a bare x are the same param
        ("n >= 3 and n <= 3 and n != 4 and n < 4", True),
        ("'a' in tags and 'z' not in params.tags", True),
        ("n in [1, 2, 3]", True),
        ("'world' in outputs.title", True),  # a substring
        ("'k' in outputs.seen", True),  # a key
        ("outputs.rows.0.t == \"x\"", True),
        ("outputs.rows.-1.t == 'x'", True),
        ("outputs.count", False),
        ("outputs.count == 0", True),
        ("outputs.missing == null and not outputs.missing", True),  # an output not stored is null
        ("'x' in outputs.missing", False),
        ("outputs.rows.9", False),
        ("true == 1", False),  # JSON equality: a boolean is not a number
        ("1 == 1.0 and -1 < 0 and 2.5 > 2", True),
        ("'b' > 'a'", True),
        ("[1, [2]] == [1, [2]]", True),
        ("run.id == 'r1' and run.attempt == 2", True),
        ("loop.iteration == 1", True),
        ("${ n == 3 }", True),  # the whole expression may be written inside ${...}
        ("'it\\'s' == \"it's\"", True),
        ("params.empty or []", False),
    ],
)
def test_expressions_evaluate_with_json_truthiness_and_precedence(text: str, expected: bool) -> None:
    assert holds(text) is expected


def test_truthiness_is_json_like() -> None:
    assert [truthy(v) for v in (None, False, 0, 0.0, "", [], {})] == [False] * 7
    assert [truthy(v) for v in (True, 1, -0.5, "0", [0], {"a": None})] == [True] * 6


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a ==", "expected a value at position 5, got the end"),
        ("a = 1", "unexpected '=' at position 3 (compare with == or !=)"),
        ("a && b", "(write and / or)"),
        ("n + 1 > 2", "there is no arithmetic"),
        ("1 < n < 5", "comparisons do not chain"),
        ("'open", "a string that is not closed"),
        ("(a or b", "expected ')'"),
        ("a b", "unexpected 'b' at position 3"),
        ("", "the expression is empty"),
        ("params", "needs a name: params.NAME"),
        ("- a", "'-' is only allowed before a number"),
    ],
)
def test_syntax_errors_say_where_and_what(text: str, message: str) -> None:
    with pytest.raises(ExpressionError, match=None) as info:
        parse_expression(text)
    assert message in str(info.value), info.value


@pytest.mark.parametrize(
    "text",
    [
        "len(outputs.rows)",
        "outputs.title.upper()",
        "params.mode.__class__.__mro__()",
        "__import__('os')",
        "outputs.rows.0.__getitem__(0)",
    ],
)
def test_no_calls_are_possible(text: str) -> None:
    with pytest.raises(ExpressionError, match="calls are not allowed"):
        parse_expression(text)


def test_dotted_names_read_data_never_python_attributes() -> None:
    # A dunder is just a key no mapping has: it reads as null, never as an attribute.
    assert not holds("outputs.title.__class__")
    assert holds("outputs.title.__len__ == null")
    assert holds("params.mode.__class__.__name__ == null")
    expression = parse_expression("mode == outputs.x.y and run.id")
    assert expression.names() == [Name(("params", "mode")), Name(("outputs", "x", "y")), Name(("run", "id"))]


def test_limits_on_length_tokens_and_depth() -> None:
    with pytest.raises(ExpressionError, match=f"the limit is {MAX_EXPRESSION_LENGTH}"):
        parse_expression("a" * (MAX_EXPRESSION_LENGTH + 1))
    with pytest.raises(ExpressionError, match=f"more than {MAX_TOKENS} tokens"):
        parse_expression("[" + ",".join(["1"] * (MAX_TOKENS // 2 + 10)) + "]")
    with pytest.raises(ExpressionError, match=f"nests more than {MAX_DEPTH} deep"):
        parse_expression("(" * (MAX_DEPTH + 1) + "1" + ")" * (MAX_DEPTH + 1))
    with pytest.raises(ExpressionError, match="nests more than"):
        parse_expression("not " * 40 + "true")
    with pytest.raises(ExpressionError, match="nests more than"):
        parse_expression("[" * 30 + "]" * 30)
    assert parse_expression("(" * (MAX_DEPTH - 1) + "1" + ")" * (MAX_DEPTH - 1))
    started = time.perf_counter()
    for hostile in ("'" + "\\'" * 240, "a." * 240 + "a", "[" * 240):
        with pytest.raises(ExpressionError):
            parse_expression(hostile + "(")
    assert time.perf_counter() - started < 2  # generous: parsing is linear


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("'a' < 3", "cannot order a string and a number with '<'"),
        ("true > false", "cannot order a boolean and a boolean"),
        ("outputs.missing < 1", "cannot order a null and a number"),
        ("'a' in 3", "'in' needs a list, a string (for a substring) or a mapping"),
    ],
)
def test_values_that_do_not_fit_are_evaluation_errors(text: str, message: str) -> None:
    with pytest.raises(EvaluationError) as info:
        holds(text)
    assert message in str(info.value)


def test_short_circuit_skips_a_bad_right_side() -> None:
    assert holds("true or 'a' < 3") and not holds("false and 'a' < 3")


# --- when and blocks in templates ---------------------------------------------------------------
def test_when_on_steps_blocks_and_repeats_loads(load) -> None:
    loaded = load(
        HEAD
        + """
        steps:
          - {action: navigate, url: "https://example.com/"}
          - {action: get, what: title, into: title}
          - id: banner
            when: {present: "#cookie-banner", within_ms: 2500}
            steps:
              - {action: click, selector: "#accept", when: {url: "**/example.com/**"}}
              - repeat:
                  max: 2
                  steps:
                    - {action: click, selector: ".more", when: {if: "loop.index < 1 and outputs.title"}}
                    - steps: [{action: get, what: url, into: u, when: {absent: "#x"}}]
          - {action: get, what: url, into: last, when: {if: "${outputs.u != null}"}}
        """.replace("\n        ", "\n")
    )
    steps = loaded.template.steps
    block = steps[2]
    assert isinstance(block, BlockStep) and block.id == "banner"
    assert block.when == WhenSpec(present="#cookie-banner", within_ms=2500)
    assert isinstance(block.steps[1], RepeatStep)
    assert isinstance(block.steps[1].repeat.steps[1], BlockStep)
    assert steps[3].when.if_ == "${outputs.u != null}" and steps[3].when.kind == "if"
    assert block.steps[0].when.within_ms == 1000  # the default
    # a rendered step keeps its condition as written (the runner judges it)
    click = ClickStep.model_validate({"selector": "#a", "when": {"present": "${sel}"}})
    assert render_step(click, {}).when == WhenSpec(present="${sel}")


def test_when_on_an_undefined_output_or_param_is_a_load_error(problems) -> None:
    found = problems(
        HEAD
        + "steps:\n"
        + "  - {action: get, what: url, into: here, when: {if: \"outputs.here\"}}\n"
        + "  - {action: get, what: url, into: there, when: {if: \"outputs.here and outputs.later\"}}\n"
        + "  - {action: get, what: url, into: later, when: {if: \"params.nope or modee == 1\"}}\n"
        + "  - {action: click, selector: a, when: {if: \"loop.index == 0\"}}\n"
        + "  - {action: click, selector: a, when: {if: \"run.nope\"}}\n"
    )
    assert found == [
        "line 8: steps[0].when.if: ${outputs.here} refers to nothing: no earlier step stores into "
        "'here' (earlier outputs: none)",
        "line 9: steps[1].when.if: ${outputs.later} refers to nothing: no earlier step stores into "
        "'later' (earlier outputs: here)",
        "line 10: steps[2].when.if: ${modee} refers to nothing: 'modee' is not a declared param "
        "(declared: mode, tags, n) (did you mean 'mode'?)",
        "line 10: steps[2].when.if: ${nope} refers to nothing: 'nope' is not a declared param "
        "(declared: mode, tags, n)",
        "line 11: steps[3].when.if: ${loop.index} can only be used inside a repeat",
        "line 12: steps[4].when.if: ${run.nope} is unknown; use ${run.id} or ${run.attempt}",
    ]


def test_an_output_stored_inside_a_block_counts_for_later_steps(load) -> None:
    load(
        HEAD
        + "steps:\n"
        + "  - steps: [{action: get, what: url, into: inner}]\n"
        + "  - {action: click, selector: a, when: {if: \"outputs.inner\"}}\n"
    )


def test_bad_expression_syntax_names_the_step_path(problems) -> None:
    found = one(problems(HEAD + "steps:\n  - steps:\n    - {action: click, selector: a, when: {if: \"n >\"}}\n"))
    assert found == (
        "line 9: steps[0].steps[0].when.if: invalid if expression 'n >': "
        "expected a value at position 4, got the end"
    )


@pytest.mark.parametrize(
    ("when", "message"),
    [
        ('{visible: "#a"}', "unknown field 'visible' in when; allowed fields: present, absent, url, if, within_ms"),
        ('{present: "#a", absent: "#b"}', "when needs exactly one of present, absent, url, if; got present and absent"),
        ("{}", "when needs exactly one of present, absent, url, if"),
        ('"#a"', "expected a mapping, got a string '#a'"),
        ('{url: "**/x", within_ms: 10}', "when: within_ms only applies to present and absent"),
        ('{present: "#a", within_ms: 60000}', "must be at most 30000, got 60000"),
        ('{present: ""}', "must not be empty"),
        ("{if: true}", "expected a string, got a boolean true"),
        ('{iff: "true"}', "unknown field 'iff' in when (did you mean 'if'?)"),
    ],
)
def test_malformed_when_is_a_specific_load_error(problems, when: str, message: str) -> None:
    found = one(problems(HEAD + f"steps:\n  - {{action: click, selector: a, when: {when}}}\n"))
    assert found.startswith("line 8: steps[0].when"), found
    assert message in found, found


def test_a_bad_url_pattern_in_when_is_a_load_error(problems) -> None:
    found = one(problems(HEAD + 'steps:\n  - {action: click, selector: a, when: {url: "re:(unclosed"}}\n'))
    assert found.startswith("line 8: steps[0].when.url: invalid regular expression"), found


def test_a_selector_reference_in_when_is_checked(problems) -> None:
    found = one(problems(HEAD + 'steps:\n  - {action: click, selector: a, when: {present: "#${nope}"}}\n'))
    assert "steps[0].when.present: ${nope} refers to nothing" in found


def test_block_shape_errors(problems) -> None:
    found = problems(
        HEAD
        + "steps:\n"
        + "  - {action: click, selector: a, steps: [{action: click, selector: b}]}\n"
        + "  - {steps: [], when: {present: a}}\n"
        + "  - {steps: [{action: click, selector: b}], max: 3}\n"
    )
    assert found == [
        "line 8: steps[0]: a step has either 'action' or 'steps' (a block), not both; put actions in steps",
        "line 8: steps[0]: unknown field 'selector' for a block (a step with steps:); allowed fields: id, "
        "description, when, steps",
        "line 9: steps[1].steps: must not be empty",
        "line 10: steps[2]: unknown field 'max' for a block (a step with steps:); allowed fields: id, "
        "description, when, steps",
    ]


def test_blocks_nest_only_so_deep(problems) -> None:
    inner = "{action: click, selector: a}"
    for _ in range(20):
        inner = f"{{steps: [{inner}]}}"
    found = one(problems(HEAD + f"steps:\n  - {inner}\n"))
    assert "blocks and repeats nest more than 16 deep" in found


def test_a_duplicate_id_inside_a_block_is_found(problems) -> None:
    found = one(problems(HEAD + "steps:\n  - {id: a, action: click, selector: a}\n  - steps: [{id: a, action: click, selector: b}]\n"))
    assert found.startswith("line 9: steps[1].steps[0].id: duplicate step id 'a'")


def test_side_effects_inside_blocks_are_found_by_path(load) -> None:
    loaded = load(
        HEAD
        + "steps:\n"
        + "  - {action: navigate, url: 'https://example.com/'}\n"
        + "  - steps:\n"
        + "      - {action: click, selector: a}\n"
        + "      - repeat: {max: 2, steps: [{steps: [{action: click, selector: b, side_effect: true}]}]}\n"
    )
    assert is_side_effect(loaded, "1.1[2].0.0")
    assert not is_side_effect(loaded, "1.0") and not is_side_effect(loaded, "1.1[2].0")
    assert not is_side_effect(loaded, "1.5")


def test_a_condition_that_reads_a_secret_param_is_refused_at_load(problems) -> None:
    """A skip is recorded with its reason, so ``password < 'M'`` would be an oracle: every way a
    condition can name a secret param is a line-numbered load error (issue 22, item 4)."""
    found = problems(
        HEAD
        + "  password: {type: secret}\n"
        + "  pin: {type: secret}\n"
        + "steps:\n"
        + "  - {action: click, selector: a, when: {if: \"password < 'M'\"}}\n"
        + "  - {action: click, selector: a, when: {if: \"'Alpha' in password\"}}\n"
        + "  - {action: click, selector: a, when: {if: \"params.pin == '1234'\"}}\n"
        + "  - {action: click, selector: a, when: {if: \"${password != null}\"}}\n"
        + "  - {action: click, selector: a, when: {if: \"'${pin}' == 'x'\"}}\n"
        + "  - {action: click, selector: a, when: {if: \"mode == 'fast' or (not params.password)\"}}\n"
        + "  - {action: click, selector: a, when: {present: \"text=${password}\"}}\n"
        + "  - {action: click, selector: a, when: {absent: {role: button, name: \"${pin}\"}}}\n"
        + "  - {action: click, selector: a, when: {url: \"**/x?k=${password}\"}}\n"
        + "  - repeat: {max: 2, while_present: \"#${pin}\", steps: [{action: click, selector: a}]}\n"
        + "  - {action: type, selector: a, text: \"${password}\", when: {if: \"mode == 'fast'\"}}\n"
    )
    refused = "whether the step runs is recorded, which would tell the secret"
    assert [p.split(": a condition may not read ")[0] for p in found] == [
        "line 10: steps[0].when.if", "line 11: steps[1].when.if", "line 12: steps[2].when.if",
        "line 13: steps[3].when.if", "line 14: steps[4].when.if", "line 15: steps[5].when.if",
        "line 16: steps[6].when.present", "line 17: steps[7].when.absent", "line 18: steps[8].when.url",
        "line 19: steps[9].repeat.while_present",
    ]
    assert all(refused in p for p in found)
    assert "secret param 'pin'" in found[2] and "secret param 'password'" in found[0]
