"""Shim: the CLI's tests moved to ``tests/cli/``; ``browserq`` is kept importable from here for
branches that still import it (remove after the issue-8 merge)."""

from tests.cli.helpers import browserq

__all__ = ["browserq"]
