"""Recorded commands → frozen steps, on step records as the store gives them (no browser): what is
kept, left out, substituted, escaped and refused; and the text is a template the loader takes."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
import yaml

from browserq.secrets import Secret
from browserq.sessions.errors import FreezeRefused
from browserq.submit.freeze import check_ref, param_specs, template_text
from browserq.submit.freeze_steps import freeze_steps
from browserq.templates import load_template_text

_ids = iter(range(1, 10_000))


def record(path: int, action: str, status: str = "succeeded", events: list[dict[str, Any]] | None = None,
           error_code: str | None = None, **inputs: Any) -> SimpleNamespace:
    return SimpleNamespace(id=next(_ids), step_path=str(path), step_id=f"cmd.{path}", action=action, status=status,
                           inputs={"id": f"cmd.{path}", "action": action, **inputs}, events=events,
                           error_code=error_code)


def locator(ref: str, selector: Any, why: str | None = None) -> list[dict[str, Any]]:
    return [{"type": "locator", "ref": ref, "selector": selector, "by": "role" if selector else "none",
             **({"why": why} if why else {})}]


def freeze(records: list[Any], params: dict[str, Any], **options: Any) -> Any:
    return freeze_steps(records, params, **{"allowed_domains": ["127.0.0.1"], "allow_eval": False,
                                            "session_id": "s1", **options})


def test_secrets_become_references_wherever_they_occur_and_literals_are_escaped() -> None:
    frozen = freeze([
        record(0, "navigate", url="http://127.0.0.1/a?token=hunter22&x=1"),        # typed in clear, inside a URL
        record(1, "fill", selector="ref=e1.2", value="[secret:pw]", events=locator("e1.2", {"name": "Pass", "role": "textbox"})),
        record(2, "fill", selector="#note", value="Pay ${amount} to ada"),           # a page's literal ${
        record(3, "fill", selector="#who", value="ada"),
    ], {"pw": Secret("hunter22"), "user": "ada"})
    steps = [step for _, step in frozen.steps]
    assert steps[0]["url"] == "http://127.0.0.1/a?token=${pw}&x=1"
    assert steps[1] == {"action": "fill", "selector": {"role": "textbox", "name": "Pass"}, "value": "${pw}"}
    assert steps[2]["value"] == "Pay $${amount} to ada"  # only whole values equal to a param become ${param}
    assert steps[3]["value"] == "${user}" and frozen.used_params == {"pw", "user"}


def test_a_secret_the_params_do_not_name_is_refused() -> None:
    with pytest.raises(FreezeRefused, match=r"secret 'password'.*params=\{'password': Secret"):
        freeze([record(0, "fill", selector="#p", value="[secret:password]")], {"pw": Secret("other")})


def test_a_url_outside_allowed_domains_is_refused_also_through_a_param() -> None:
    with pytest.raises(FreezeRefused, match=r"command 0 \(navigate\)"):
        freeze([record(0, "navigate", url="http://127.0.0.2/")], {})
    with pytest.raises(FreezeRefused, match="command 1"):
        freeze([record(0, "get", what="title", into="command_output"),
                record(1, "navigate", url="http://127.0.0.2/x")], {"start": "http://127.0.0.2/x"})
    with pytest.raises(FreezeRefused, match=r"command 1 \(new_tab\)"):
        freeze([record(0, "new_tab"), record(1, "new_tab", url="http://127.0.0.2/y")], {})


def test_what_is_left_out_and_why() -> None:
    frozen = freeze([
        record(0, "navigate", url="http://127.0.0.1/"),
        record(1, "click", "failed", error_code="SELECTOR_NOT_FOUND", selector="#x"),
        record(2, "click", "skipped", selector="#banner", optional=True),
        record(3, "click", "unknown", selector="#pay", side_effect=True),
        record(4, "screenshot", name="a.png"),
        record(5, "eval", expression="1 + 1", into="command_output"),
        record(6, "click", selector="ref=e1.4", events=locator("e1.4", None, "inside an iframe")),
        record(7, "click", selector="ref=e1.5"),  # no capture at all
        record(8, "get", what="title", into="command_output"),
        record(8, "get", what="url", into="command_output"),  # a retry in place: the last attempt counts
        record(9, "handoff", message="solve it", until="absent '#captcha'", timeout_s=60),
    ], {})
    assert [i for i, _ in frozen.steps] == [0, 8] and frozen.steps[1][1] == {"action": "get", "what": "url", "into": "get_8"}
    why = dict(frozen.left_out)
    assert why[1] == "it failed (SELECTOR_NOT_FOUND)" and "skipped" in why[2] and "unknown" in why[3]
    assert "screenshot" in why[4] and "do not allow eval" in why[5]
    assert why[6] == "no locator matches the node of ref e1.4 alone: inside an iframe" and "e1.5" in why[7]
    assert "a handoff" in why[9]  # what a person did is no step (its recorded until is text)
    kept = freeze([record(5, "eval", expression="1 + 1", into="total")], {}, allow_eval=True)
    assert kept.steps == [(5, {"action": "eval", "expression": "1 + 1", "into": "total"})]
    assert kept.outputs == {"total": 5}


def test_the_text_is_a_template_the_loader_takes() -> None:
    params = {"user": "ada", "pw": Secret("hunter22"), "pages": 3, "start": "http://127.0.0.1/"}
    frozen = freeze([
        record(0, "navigate", url="http://127.0.0.1/"),
        record(1, "fill", selector="ref=e1.1", value="ada", events=locator(
            "e1.1", {"within": {"nth": 0, "css": "#row"}, "name": "User", "exact": True, "role": "textbox"})),
        record(2, "fill", selector="#pw", value="hunter22"),
        record(3, "extract", selector=".q", fields={"t": {"selector": ".t"}, "a": {"selector": "a", "attr": "href"}},
               into="command_output"),
    ], params)
    text = template_text("frozen", "1.0.0", "s1", param_specs(params, "s1"), {"allowed_domains": ["127.0.0.1"]}, frozen)
    loaded = load_template_text(text)
    assert loaded.ref == "frozen@1.0.0" and "hunter22" not in text
    body = yaml.safe_load(text)
    assert body["params"] == {"user": {"type": "string", "default": "ada"}, "pw": {"type": "secret", "required": True},
                              "pages": {"type": "int", "default": 3}, "start": {"type": "url", "default": "http://127.0.0.1/"}}
    assert body["steps"][0]["url"] == "${start}"
    assert list(body["steps"][1]["selector"]) == ["role", "name", "exact", "within"]  # in reading order
    assert body["steps"][3]["fields"] == {"t": ".t", "a": {"selector": "a", "attr": "href"}}
    assert "  - {action: fill, selector: {role: textbox, name: User, exact: true, within: {css: '#row', nth: 0}}, value: '${user}'}  # command 1" in text


@pytest.mark.parametrize(("name", "version"), [("Bad Name", "1.0.0"), ("ok", "1.0"), ("ok", "01.0.0"), ("session", "1.0.0")])
def test_invalid_names_and_versions(name: str, version: str) -> None:
    from browserq import TemplateInvalid

    with pytest.raises(TemplateInvalid):
        check_ref(name, version)
