"""Template + params → a recorded run → executed: what the producer stores is what the worker needs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from browserq.errors import TemplateChanged
from browserq.execute import Runtime, prepare_loaded, record_run
from browserq.store import Store
from browserq.templates import load_template_text
from tests.conftest import make_settings, template

OPTIONAL_SECRET = """
params:
  base_url: {type: url, required: true}
  token: {type: secret}
settings: {trace: off, step_timeout_s: 10}
steps:
  - {action: navigate, url: "${base_url}/quotes/"}
  - {action: get, what: title, into: title}
"""


def test_an_optional_secret_left_unset_does_not_fail_the_run(any_runtime: Runtime, demo) -> None:
    loaded = template(OPTIONAL_SECRET)
    outcome = any_runtime.run_loaded(loaded, {"base_url": demo.url})
    assert outcome.status == "completed", (outcome.error_code, outcome.error_message)
    prepared = prepare_loaded(loaded, {"base_url": demo.url})
    assert prepared.redacted_params.get("token") is None  # nothing to hide, nothing to look for
    run = any_runtime.store.runs.get_run(outcome.run_id)
    assert run.params.get("token") is None and run.status == "completed"


def test_an_optional_secret_given_is_still_masked(any_runtime: Runtime, demo) -> None:
    loaded = template(OPTIONAL_SECRET)
    outcome = any_runtime.run_loaded(loaded, {"base_url": demo.url, "token": "tok-123456"})
    assert outcome.status == "completed", (outcome.error_code, outcome.error_message)
    assert any_runtime.store.runs.get_run(outcome.run_id).params["token"] == "[secret:token]"


def test_a_template_is_saved_once_per_store_and_its_pin_still_holds(tmp_path: Path) -> None:
    store = Store(make_settings(tmp_path).database_url)
    store.schema.upgrade()
    saves: list[str] = []
    real = store.templates.save_template

    def counting(**kwargs: Any) -> int:
        saves.append(kwargs["name"])
        return real(**kwargs)

    store.templates.save_template = counting  # type: ignore[method-assign]
    try:
        loaded = template(OPTIONAL_SECRET)
        first, second = (prepare_loaded(loaded, {"base_url": "https://example.com/"}) for _ in range(2))
        record_run(store, first, secret_box=None)
        record_run(store, second, secret_box=None)
        assert saves == [loaded.name]
        assert store.runs.get_run(first.run_id).template_id == store.runs.get_run(second.run_id).template_id
        changed = load_template_text(loaded.body.replace("/quotes/", "/other/"), source="<test>")
        with pytest.raises(TemplateChanged):  # another body under the same name@version
            record_run(store, prepare_loaded(changed, {"base_url": "https://example.com/"}), secret_box=None)
        assert saves == [loaded.name, loaded.name]
    finally:
        store.dispose()
