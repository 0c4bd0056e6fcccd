"""Warnings: a step or run that succeeded although a limit cut its result short says so.

A repeat that stopped at ``max`` while its ``until_missing``/``while_present`` selector still
matched, an extract that kept ``limit`` of more records, a wait shortened to the step's timeout:
the run still ends ``completed``, but the warning is stored on the step attempt (when there is
one), in ``runs.warnings``, in the result dict (``warnings``) and shown by ``browserq show`` —
so a truncated scrape never looks complete.
"""

from __future__ import annotations

from typing import Any

#: A repeat reached ``max`` while its stop condition still said "more to do".
REPEAT_MAX_REACHED = "REPEAT_MAX_REACHED"
#: An extract matched more elements than its ``limit`` and kept only the first ones.
EXTRACT_LIMITED = "EXTRACT_LIMITED"
#: A ``wait: {ms: …}`` longer than what the step may take waited only that long.
WAIT_SHORTENED = "WAIT_SHORTENED"
#: The site opened more pages than a run keeps open at once: the extra ones were closed.
PAGES_CLOSED = "PAGES_CLOSED"


def step_warning(code: str, message: str) -> dict[str, Any]:
    """What a step attempt's record keeps."""
    return {"code": code, "message": message}


def run_warning(step_path: str, code: str, message: str) -> dict[str, Any]:
    """What the run's record and result keep: the step path says where."""
    return {"step": step_path, "code": code, "message": message}
