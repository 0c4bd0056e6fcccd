"""What one attempt is built from: the stored body, the stored params, side effects by path."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from browserq.errors import ConfigError
from browserq.execute import prepare_loaded, record_run
from browserq.execute.run_request import StoredTemplates, is_side_effect, materialize, outcome_of
from browserq.secrets import SecretBox
from browserq.store import Store
from browserq.store.templates import Templates
from tests.conftest import TEST_SECRET_KEY, make_settings, template

NESTED = """
params:
  token: {type: secret, required: true}
steps:
  - {action: navigate, url: "https://example.com/"}
  - repeat:
      max: 3
      steps:
        - {action: click, selector: "#a"}
        - {action: click, selector: "#send", side_effect: true, postcondition: {selector: "#ok"}}
"""


def test_side_effects_are_found_inside_repeats() -> None:
    loaded = template(NESTED)
    assert is_side_effect(loaded, "1[2].1")
    assert not is_side_effect(loaded, "1[2].0") and not is_side_effect(loaded, "0")
    assert not is_side_effect(loaded, "0[1].0")  # a step that is no repeat has no inner steps
    assert not is_side_effect(loaded, "7") and not is_side_effect(loaded, "not a path")


def test_the_stored_run_is_what_an_attempt_executes(tmp_path: Path) -> None:
    settings = make_settings(tmp_path)
    store = Store(settings.database_url)
    store.schema.upgrade()
    box = SecretBox(TEST_SECRET_KEY)
    try:
        kept = prepare_loaded(template(NESTED), {"token": "t0ps3cret"})
        record_run(store, kept, secret_box=box)
        templates = StoredTemplates(store, settings)
        loaded, params, names = materialize(templates, store.runs.get_run(kept.run_id), None, box)
        assert params["token"] == "t0ps3cret" and names == {"token"} and loaded.body == kept.loaded.body
        lost = prepare_loaded(template(NESTED), {"token": "t0ps3cret"})
        record_run(store, lost, secret_box=None)  # an in-process run: the secret stayed in memory
        with pytest.raises(ConfigError, match="were not stored"):
            materialize(templates, store.runs.get_run(lost.run_id), None, box)
        outcome = outcome_of(store.runs.get_run(kept.run_id))
        assert (outcome.status, outcome.outputs, outcome.warnings) == ("queued", {}, [])
    finally:
        store.dispose()


class CountingTemplates(Templates):
    """The real templates, counting the bodies they are asked for."""

    bodies_read = 0

    def get_template_body(self, template_id: int):  # type: ignore[no-untyped-def]
        self.bodies_read += 1
        return super().get_template_body(template_id)


class CountingStore(Store):
    """The real store with :class:`CountingTemplates`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.templates = CountingTemplates(self.database)


def test_a_stored_template_is_read_and_parsed_once_per_process(tmp_path: Path) -> None:
    settings = make_settings(tmp_path)
    store = CountingStore(settings.database_url)
    store.schema.upgrade()
    try:
        loaded = template(NESTED)
        runs = [prepare_loaded(loaded, {"token": "x"}) for _ in range(3)]
        for prepared in runs:
            record_run(store, prepared, secret_box=None)
        views = [store.runs.get_run(prepared.run_id) for prepared in runs]
        assert len({view.template_id for view in views}) == 1
        templates = StoredTemplates(store, settings, kept=1)
        first = templates.get(views[0].template_id)
        assert templates.get(views[1].template_id) is first and store.templates.bodies_read == 1
        other = prepare_loaded(template(NESTED.replace("#a", "#b")), {"token": "x"})
        record_run(store, other, secret_box=None)
        other_id = store.runs.get_run(other.run_id).template_id
        assert templates.get(other_id)[0].body != first[0].body and store.templates.bodies_read == 2
        templates.get(views[2].template_id)  # only one is kept: the first was dropped
        assert store.templates.bodies_read == 3
    finally:
        store.dispose()
