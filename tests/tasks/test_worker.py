"""A worker process without a usable browser leaves, so the prefork pool starts a fresh one."""

from __future__ import annotations

import pytest

from browserq.errors import ConfigError
from browserq.tasks import worker


def test_a_process_without_a_browser_exits_with_its_status(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(worker, "NO_BROWSER_PAUSE_S", 0.0)
    with pytest.raises(SystemExit) as exited:
        worker.exit_without_browser(ConfigError("Chromium would not start"))
    assert exited.value.code == worker.EXIT_NO_BROWSER == 70
    assert isinstance(exited.value.__cause__, ConfigError)


def test_stopping_a_process_that_never_started_is_harmless() -> None:
    worker.stop_process()
    worker.stop_process()
