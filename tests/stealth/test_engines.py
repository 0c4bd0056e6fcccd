"""The headless shell's stealth tells, as docs/browsers.md ("Engines") and ``doctor`` state them.

The stealth layer is applied on ``BROWSERQ_BROWSER=headless-shell`` as on Chromium; what it cannot
hide there is pinned here, so the docs a user chooses by stay true.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from browserq import engines
from tests.stealth.conftest import run
from tests.stealth.detector import DetectorServer, evaluate_checks
from tests.stealth.test_detector import REMAINING, _failed, _stealth_run

#: Detector checks that fail on the headless shell with stealth on, beyond the driver's CDP tells.
HEADLESS_SHELL_TELLS = frozenset({
    "uadata_no_headless_brand",        # HeadlessChrome among navigator.userAgentData.brands
    "service_worker_uadata_matches",   # ... and in service and shared workers
    "shared_worker_uadata_matches",
    "chrome_object",                   # no window.chrome (app, csi, loadTimes)
    "plugins_present",                 # no plugins, no mimeTypes, pdfViewerEnabled false
    "notification_permission_default",  # Notification.permission "denied" ...
    "permissions_consistent",          # ... while permissions.query says "prompt"
    "connection_rtt_nonzero",          # navigator.connection.rtt is 0
    "accept_language_matches_js",      # the Accept-Language header lacks its q-list
})


@pytest.mark.skipif(engines.find_system(engines.HEADLESS_SHELL) is None,
                    reason="apt-get install chromium-headless-shell")
def test_the_headless_shell_gives_away_what_the_docs_say(
    detector_server: DetectorServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BROWSERQ_BROWSER", engines.HEADLESS_SHELL)
    detector_run, _fp, _host = run(lambda: _stealth_run(detector_server))
    checks, why = evaluate_checks(detector_run)
    failed = _failed(checks)
    assert failed == REMAINING | HEADLESS_SHELL_TELLS, {c: why.get(c, "passed") for c in failed ^ (
        REMAINING | HEADLESS_SHELL_TELLS)}
    docs = (Path(__file__).resolve().parents[2] / "docs" / "browsers.md").read_text()
    assert f"{len(HEADLESS_SHELL_TELLS)} more" in docs and "HeadlessChrome" in engines.STEALTH_TELLS["headless-shell"]
