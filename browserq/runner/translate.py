"""Moved to :mod:`browserq.browsers.errors` (the one place Playwright errors are translated)."""
from browserq.browsers.errors import first_line, translate

__all__ = ["first_line", "translate"]
