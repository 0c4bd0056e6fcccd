"""The Playwright-compatible driver this process talks to: stock ``playwright`` or a patched fork.

``BROWSERQ_DRIVER`` picks it once per process (a worker's browsers all use one driver):

* ``playwright`` (default): the upstream driver. CDP's ``Runtime`` domain stays enabled on every
  page and ``evaluate`` runs in the page's main world — both visible to a watchful page.
* ``rebrowser``: ``rebrowser-playwright`` (``pip install 'browserq[rebrowser]'``), upstream with
  the rebrowser patches: no ``Runtime.enable``, evaluations in an isolated world.
* ``patchright``: ``patchright`` (``pip install 'browserq[patchright]'``), another patched fork.

The forks are separate packages with their own classes, so code that catches ``Error`` or uses
``expect`` must take them from here, never from ``playwright.async_api``; type hints may keep
naming Playwright's classes (the forks' objects have the same API). ``browserq/stealth/README.md``
compares the drivers.
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType
from typing import Any

from browserq.drivers import DRIVERS, check_installed, driver_name


def _load(name: str) -> ModuleType:
    check_installed(name)
    if name == "rebrowser":
        # Evaluations in an isolated world: page scripts cannot see them (the rebrowser default
        # reaches the main world through a binding a page can notice). Set it yourself to choose.
        os.environ.setdefault("REBROWSER_PATCHES_RUNTIME_FIX_MODE", "alwaysIsolated")
    return importlib.import_module(DRIVERS[name][0])


NAME: str = driver_name()
module: ModuleType = _load(NAME)

Error: type[Exception] = module.Error
TimeoutError: type[Exception] = module.TimeoutError
expect: Any = module.expect
async_playwright: Any = module.async_playwright
