"""Every action test, the detector and the failure evidence under each supported driver, each in a
pytest subprocess with ``BROWSERQ_DRIVER`` set: a driver is chosen once per process.

The other stealth tests inspect the page's JavaScript state with ``page.evaluate``; under
rebrowser (isolated-world evaluations) that state is out of their reach by design."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from browserq.drivers import DRIVERS

REPO = Path(__file__).resolve().parents[2]
FORKS = [name for name in DRIVERS if name != "playwright"]
#: The suites each fork runs, in two groups of about equal length: each (fork, group) is a test of
#: its own, so that pytest-xdist runs the four pytest subprocesses on four workers at once (each
#: waits on Chromium more than it computes) instead of one worker holding the whole matrix. They
#: run on the SQLite store only (``TEST_STORES``): the store is not the driver's business, and the
#: main suite runs each of these tests on both stores.
SUITES = {
    "actions": ("tests/actions",),
    "stealth-evidence": ("tests/stealth/test_detector.py", "tests/stealth/test_workers.py",
                         "tests/stealth/test_public_pages.py", "tests/runner/test_evidence.py"),
}


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.parametrize("group", list(SUITES))
@pytest.mark.parametrize("driver", FORKS)
def test_every_action_test_passes_under_each_fork(driver: str, group: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *SUITES[group]],
        cwd=REPO, env={**os.environ, "BROWSERQ_DRIVER": driver, "TEST_STORES": "sqlite"},
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=840,
    )
    tail = "\n".join(done.stdout.splitlines()[-40:])
    assert done.returncode == 0, f"under BROWSERQ_DRIVER={driver}:\n{tail}"
    assert " passed" in tail and "failed" not in tail.splitlines()[-1], tail


def test_the_chosen_driver_is_the_one_running_and_an_unknown_one_is_refused() -> None:
    probe = "from browserq.browsers import api; print(api.NAME, api.Error.__module__)"
    for driver, (module, _) in DRIVERS.items():
        out = subprocess.run([sys.executable, "-c", probe], env={**os.environ, "BROWSERQ_DRIVER": driver},
                             capture_output=True, text=True, check=True).stdout.split()
        assert out[0] == driver and out[1].startswith(module.split(".")[0] + "._impl")
    bad = subprocess.run([str(Path(sys.executable).with_name("browserq")), "settings"], env={**os.environ, "BROWSERQ_DRIVER": "selenium"},
                         capture_output=True, text=True)
    assert bad.returncode != 0
    assert "BROWSERQ_DRIVER='selenium' is not a driver browserq knows: use one of playwright, rebrowser, patchright" in bad.stdout + bad.stderr


def test_a_driver_named_only_in_the_settings_file_is_refused_at_launch(tmp_path: Path) -> None:
    """The driver is loaded at import, from the environment: a settings file that names another
    one cannot take effect, and the first launch says how to set it instead."""
    import asyncio

    from browserq.browsers import api
    from browserq.browsers.errors import BrowserLaunchFailed
    from browserq.browsers.launcher import launch_chromium
    from tests.conftest import make_settings

    other = next(name for name in DRIVERS if name != api.NAME)
    settings = make_settings(tmp_path, driver=other)
    with pytest.raises(BrowserLaunchFailed, match=f"set BROWSERQ_DRIVER={other} in the environment"):
        asyncio.run(launch_chromium(None, settings))  # type: ignore[arg-type]
