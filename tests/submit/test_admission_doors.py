"""One door admits every run (browserq/execute/admission.py): each entry point refuses what the
settings' limits refuse, with the same message. Each door once picked its own limits and they
drifted (in-process ``run_loaded`` ignored BROWSERQ_MAX_HUMAN_WAIT_S, the schedules check passed
one limit of three); the worker's door, for messages sent without the producer, is
tests/e2e/test_admission_worker.py."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from browserq.errors import BrowserqError, ParamError
from browserq.execute.runtime import Runtime
from browserq.schedules import check_schedules
from browserq.secrets import SecretBox
from browserq.settings import get_settings
from browserq.templates import TemplateRegistry
from tests.conftest import TEST_SECRET_KEY, make_settings, producer_env, template
from tests.submit.conftest import producer_settings

#: The limits every door is held to in this module (far below the defaults, so a door that falls
#: back to a default of its own lets the run in).
LIMITS = {"BROWSERQ_MAX_PARAMS_BYTES": "2000", "BROWSERQ_MAX_HUMAN_WAIT_S": "60",
          "BROWSERQ_MAX_FILE_PARAM_BYTES": "1000"}
TEMPLATES = {
    "echo.yaml": """
        name: echo
        version: "1.0.0"
        params:
          text: {type: string}
        steps:
          - {action: navigate, url: "http://127.0.0.1:9/"}
        """,
    "asks.yaml": """
        name: asks
        version: "1.0.0"
        params:
          text: {type: string, required: false}
        steps:
          - {action: navigate, url: "http://127.0.0.1:9/"}
          - {id: ask, action: handoff, message: "solve it", until: {absent: "#x"}, timeout_s: 600}
        """,
    "takes_file.yaml": """
        name: takes_file
        version: "1.0.0"
        params:
          cv: {type: file}
        steps:
          - {action: navigate, url: "http://127.0.0.1:9/"}
        """,
}
TOO_BIG = {"text": "x" * 5000}
SMALL_FILE = {"cv": {"filename": "cv.txt", "content_base64": "aGVsbG8g"}}
BIG_FILE = {"cv": {"filename": "cv.txt", "content_base64": "aGVsbG8g" * 400}}  # 2,400 bytes


@pytest.fixture
def doors(tmp_path: Path) -> Iterator[dict[str, Callable[[str, dict[str, Any]], Any]]]:
    """Each entry point, as ``door(template_name, params)``, under :data:`LIMITS`."""
    templates = tmp_path / "templates"
    templates.mkdir()
    for name, body in TEMPLATES.items():
        (templates / name).write_text(_dedent(body))
    env = producer_settings(tmp_path, BROWSERQ_TEMPLATES_DIR=str(templates),
                            BROWSERQ_QUEUE=f"bq_doors_{uuid.uuid4().hex[:8]}", **LIMITS)  # nobody consumes it
    with producer_env(env):
        from browserq import run_template
        from browserq.submit import run_batch

        settings = get_settings()
        runtime = Runtime(make_settings(tmp_path / "local", templates_dir=templates,
                                        max_params_bytes=2000, max_human_wait_s=60, max_file_param_bytes=1000))
        registry = TemplateRegistry.from_settings(runtime.settings)

        def schedule(name: str, params: dict[str, Any]) -> Any:
            if "cv" in params:  # a schedule names a file param's value by reference, never inline
                held = tmp_path / "cv.json"
                held.write_text(_yaml(params["cv"]))
                params = {**params, "cv": {"file": str(held)}}
            lines = "".join(f"      {k}: {_yaml(v)}\n" for k, v in params.items())
            path = tmp_path / "schedules.yaml"
            path.write_text(f"schedules:\n  - name: s1\n    template: {name}\n    every: 1h\n    params:\n{lines}")
            checked = check_schedules(path, registry, SecretBox(TEST_SECRET_KEY), settings=settings)
            if checked.problems:
                raise ParamError(name, [str(p) for p in checked.problems])

        def loaded(name: str, params: dict[str, Any]) -> Any:
            return runtime.run_loaded(template(_dedent(TEMPLATES[f"{name}.yaml"])), params)

        yield {
            "delay": lambda name, params: run_template.delay(name, params=params),
            "apply_async": lambda name, params: run_template.apply_async(args=[name], kwargs={"params": params}),
            "run_batch": lambda name, params: run_batch(name, [params, params]),
            "run_local": lambda name, params: runtime.run_local(name, params),
            "run_loaded": loaded,
            "schedule": schedule,
        }
        runtime.store.dispose()


def _dedent(text: str) -> str:
    import textwrap

    return textwrap.dedent(text).strip() + "\n"


def _yaml(value: Any) -> str:
    import json

    return json.dumps(value)


DOORS = ["delay", "apply_async", "run_batch", "run_local", "run_loaded", "schedule"]


@pytest.mark.parametrize("door", DOORS)
def test_every_door_holds_params_to_the_size_limit(doors: dict[str, Any], door: str) -> None:
    with pytest.raises(ParamError) as refused:
        doors[door]("echo", TOO_BIG)
    assert "BROWSERQ_MAX_PARAMS_BYTES" in str(refused.value)


@pytest.mark.parametrize("door", DOORS)
def test_every_door_holds_handoffs_to_the_human_wait_limit(doors: dict[str, Any], door: str) -> None:
    with pytest.raises(ParamError) as refused:
        doors[door]("asks", {})
    assert "BROWSERQ_MAX_HUMAN_WAIT_S=60" in str(refused.value)


@pytest.mark.parametrize("door", DOORS)
def test_every_door_holds_file_params_to_their_limit(doors: dict[str, Any], door: str) -> None:
    with pytest.raises(BrowserqError) as refused:
        doors[door]("takes_file", BIG_FILE)
    if door == "schedule":  # a referenced value is never shown, nor what is wrong with it
        doors[door]("takes_file", SMALL_FILE)  # the same schedule with a small file passes
    else:
        assert "over the limit of 1,000 (BROWSERQ_MAX_FILE_PARAM_BYTES)" in str(refused.value)
