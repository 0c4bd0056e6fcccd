"""A trace of a run that types a secret key by key: still one trace that opens, and no prefix."""

from __future__ import annotations

import hashlib
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from browserq.demo.site import DEMO_PASSWORD
from browserq.execute.runtime import Runtime
from tests.conftest import REPO, template
from tests.secrets.forms import find_leaks, keystrokes, secret_forms

pytestmark = pytest.mark.slow

HUMAN_LOGIN = """
params:
  base_url: {type: url, required: true}
  password: {type: secret, required: true}
settings: {trace: always, human_input: true, step_timeout_s: 15, step_retries: 0}
steps:
  - {action: navigate, url: "${base_url}/login"}
  - {action: type, selector: "#username", text: "demo"}
  - {action: type, selector: "#password", text: "${password}"}
  - {action: click, selector: "button[type=submit]"}
  - {action: get, what: text, selector: "#welcome", into: welcome}
"""


def test_human_typed_secret_is_left_out_of_a_trace_that_still_opens(sqlite_runtime: Runtime, demo) -> None:
    outcome = sqlite_runtime.run_loaded(template(HUMAN_LOGIN), {"base_url": demo.url, "password": DEMO_PASSWORD})
    assert outcome.status == "completed", outcome  # the keys did reach the page: logged in
    assert outcome.outputs["welcome"] == "Welcome, demo"
    trace = next(a for a in sqlite_runtime.store.steps.artifacts(outcome.run_id) if a.kind == "trace")
    path = sqlite_runtime.settings.artifacts_dir / trace.path
    with zipfile.ZipFile(path) as archive:
        members = {name: archive.read(name) for name in archive.namelist()}
    # Recorded in two chunks around the secret's keystrokes, merged into one zip.
    assert {"trace.trace", "trace-1.trace"} <= set(members)
    typed = "".join(keystrokes(data) for name, data in members.items() if name.endswith(".trace"))
    assert "demo" in typed  # other text typed key by key is still in the trace
    assert DEMO_PASSWORD[:3] not in typed
    # No form of the secret and no prefix of it (snapshots after each key held one).
    forms = secret_forms(DEMO_PASSWORD, prefix_len=5)
    blobs = [(name, data) for name, data in members.items()] + [(f"{n} (name)", n.encode()) for n in members]
    assert find_leaks(blobs, forms) == []
    for name, data in members.items():  # every resource is named after what it holds now
        if name.startswith("resources/"):
            assert Path(name).stem == hashlib.sha1(data).hexdigest(), name
    # Playwright's viewer opens it, with the actions of both chunks.
    shown = subprocess.run(
        [sys.executable, "-m", "tests.secrets.viewer", str(path), "Navigate", 'Type "o"', "Mouse up"], cwd=REPO, capture_output=True, text=True, timeout=180
    )
    assert shown.returncode == 0, shown.stderr[-2000:]
    assert "Navigate" in shown.stdout and "Mouse up" in shown.stdout, shown.stdout[:2000]
    assert DEMO_PASSWORD not in shown.stdout
