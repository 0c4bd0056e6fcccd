"""A session's synthetic template: the same settings reuse one version; its settings are checked by
the template schema like any template's; its one step is never walked."""

from __future__ import annotations

import pytest

from browserq.errors import TemplateInvalid
from browserq.sessions.held import COMMAND_OUTPUT, command_step
from browserq.sessions.template import SESSION_TEMPLATE, session_template


def _template(settings: dict, secrets: tuple[str, ...] = ()):  # type: ignore[no-untyped-def]
    return session_template(settings, secrets, 3600, max_selector_length=2000, max_repeat=1000)


def test_the_same_settings_reuse_one_version_and_other_settings_get_another() -> None:
    first = _template({"allowed_domains": ["shop.example"], "step_timeout_s": 5})
    again = _template({"step_timeout_s": 5, "allowed_domains": ["shop.example"]})
    other = _template({"allowed_domains": ["shop.example"], "step_timeout_s": 6})
    with_secret = _template({"allowed_domains": ["shop.example"], "step_timeout_s": 5}, ("password",))
    assert first.name == SESSION_TEMPLATE and first.ref == again.ref and first.body == again.body
    assert len({first.ref, other.ref, with_secret.ref}) == 3
    tsettings = first.template.settings
    assert tsettings.allowed_domains == ["shop.example"] and tsettings.step_retries == 0
    assert with_secret.template.params["password"].type == "secret"


def test_a_setting_the_schema_refuses_is_refused_at_open() -> None:
    with pytest.raises(TemplateInvalid) as refused:
        _template({"no_such_setting": 1})
    assert "no_such_setting" in str(refused.value)


def test_a_command_is_a_step_of_the_template_language() -> None:
    step = command_step("get", {"selector": "#x", "what": "text"}, command_id="cmd.abc", side_effect=False)
    assert (step.action, step.id, getattr(step, "into", None)) == ("get", "cmd.abc", COMMAND_OUTPUT)
    click = command_step("click", {"selector": "#pay"}, command_id="cmd.def", side_effect=True)
    assert click.side_effect
