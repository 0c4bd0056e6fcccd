"""Fixtures of the secret tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.secrets.site import serve


@pytest.fixture(scope="session")
def secret_site() -> Iterator[str]:
    with serve() as host:
        yield host
