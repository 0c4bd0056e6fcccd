"""The template model: its params' declarations, its identity, and every step it holds."""

from __future__ import annotations

import pydantic
import pytest

from browserq.templates.model import ParamSpec, Template


def test_a_params_default_is_coerced_by_its_own_spec() -> None:
    assert ParamSpec(type="int", default="3", max=5).default == 3
    with pytest.raises(pydantic.ValidationError, match="default '9' is invalid"):
        ParamSpec(type="int", default="9", max=5)
    with pytest.raises(pydantic.ValidationError, match="a secret param cannot have a default"):
        ParamSpec(type="secret", default="x")
    with pytest.raises(pydantic.ValidationError, match="invalid regex pattern"):
        ParamSpec(type="string", pattern="(a")


def test_template_identity_and_steps_with_the_login_last() -> None:
    template = Template.model_validate({
        "name": "shop", "version": "1.2.0", "params": None, "settings": None,
        "steps": [{"action": "navigate", "url": "https://shop.example/", "id": "open"}],
        "session": {"check": ".account", "login": [{"action": "click", "selector": "#login", "id": "login"}]},
    })
    assert template.ref == "shop@1.2.0" and template.params == {}
    assert [s.id for s in template.iter_steps()] == ["open", "login"]
