"""The host's browser: its version read from the binary, and the platform strings Chrome uses."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from browserq.stealth.host import VERSION_RE, chrome_version_of, host_platform, user_agent_for

CHROMIUM = "/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else shutil.which("chromium")


@pytest.mark.skipif(CHROMIUM is None, reason="no system Chromium")
def test_the_version_is_read_from_the_real_binary() -> None:
    version = chrome_version_of(str(CHROMIUM))
    assert version is not None and VERSION_RE.fullmatch(version)


def test_an_unreadable_binary_has_no_version(tmp_path: Path) -> None:
    assert chrome_version_of(str(tmp_path / "missing")) is None
    silent = tmp_path / "silent"
    silent.write_text("#!/bin/sh\necho no version here\n")
    silent.chmod(0o755)
    assert chrome_version_of(str(silent)) is None


def test_host_platform_and_user_agent() -> None:
    assert host_platform() == ("linux" if sys.platform.startswith("linux") else host_platform())
    assert user_agent_for("linux", 156) == (
        "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
        "Chrome/156.0.0.0 Safari/537.36"
    )
