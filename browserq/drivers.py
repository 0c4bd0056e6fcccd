"""Which Playwright-compatible driver packages browserq can use, and which one is chosen.

Importing this loads no driver (settings validate ``BROWSERQ_DRIVER`` with it, producers included);
:mod:`browserq.browsers.api` loads the chosen one.
"""

from __future__ import annotations

import importlib.util
import os

from browserq.errors import ConfigError

#: driver name → (module with the async API, the pip extra that installs it)
DRIVERS: dict[str, tuple[str, str]] = {
    "playwright": ("playwright.async_api", ""),
    "rebrowser": ("rebrowser_playwright.async_api", "rebrowser"),
    "patchright": ("patchright.async_api", "patchright"),
}
DEFAULT_DRIVER = "playwright"
ENV = "BROWSERQ_DRIVER"


def driver_name(value: str | None = None) -> str:
    """The chosen driver's name (``value``, else ``$BROWSERQ_DRIVER``, else the default)."""
    name = (value if value is not None else os.environ.get(ENV, "")).strip().lower() or DEFAULT_DRIVER
    if name not in DRIVERS:
        raise ConfigError(f"{ENV}={name!r} is not a driver browserq knows: use one of {', '.join(DRIVERS)}")
    return name


def check_installed(name: str) -> None:
    """Raise a ConfigError that says what to install when ``name``'s package is missing."""
    module, extra = DRIVERS[name]
    if importlib.util.find_spec(module.split(".")[0]) is None:
        hint = f"pip install 'browserq[{extra}]'" if extra else "pip install playwright"
        raise ConfigError(f"{ENV}={name} needs its package, which is not installed: {hint}")


def usable_driver(value: str) -> str:
    """``value`` as a known, installed driver's name (the ``BROWSERQ_DRIVER`` setting's check)."""
    name = driver_name(value)
    check_installed(name)
    return name
