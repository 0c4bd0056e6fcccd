"""What Celery shows of a ``run_template`` call sent without browserq's producer: no secret in clear."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from browserq.settings import reset_settings_cache
from browserq.tasks.signals import redacted_call, template_registry
from tests.conftest import REPO


@pytest.fixture
def templates(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("BROWSERQ_TEMPLATES_DIR", str(REPO / "templates"))
    reset_settings_cache()
    template_registry.cache_clear()
    yield
    monkeypatch.undo()
    reset_settings_cache()
    template_registry.cache_clear()


def test_secret_params_are_masked_and_the_run_id_is_set(templates: None) -> None:
    task_id = str(uuid.uuid4())
    params = {"base_url": "http://127.0.0.1:8000", "password": "s3cret-pass"}
    args, kwargs = redacted_call(["login_form", params], {}, task_id)
    assert args == ["login_form", {"base_url": "http://127.0.0.1:8000", "password": "[secret:password]"}]
    assert kwargs == {"run_id": uuid.UUID(task_id).hex}
    assert params["password"] == "s3cret-pass"  # the task itself still gets the real value


def test_every_param_of_an_unknown_template_is_masked(templates: None) -> None:
    _, kwargs = redacted_call([], {"template": "nope", "params": {"a": "x", "b": 2}}, "not-a-uuid")
    assert kwargs["params"] == {"a": "[secret:a]", "b": "[secret:b]"}
    assert len(kwargs["run_id"]) == 32


def test_browserqs_own_messages_are_left_alone(templates: None) -> None:
    call = (["quotes"], {"run_id": "0" * 32})
    assert redacted_call(*call, "t") == call
