"""Which files of browserq are handed a given run id: a ``sys.setprofile`` hook (see run_path_files.py)."""

from __future__ import annotations

import dataclasses
import json
import os
import threading
from types import FrameType
from typing import Any

HEX = frozenset("0123456789abcdef")


def run_ids_in(value: Any) -> list[str]:
    """The run ids a value is or carries: a 32-hex string, or the ``run_id`` of a dict or a
    dataclass instance (read without calling anything that could have side effects)."""
    if isinstance(value, str):
        return [value] if len(value) == 32 and HEX.issuperset(value) else []
    if isinstance(value, dict):
        found = value.get("run_id")
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        found = getattr(value, "run_id", None) if "run_id" in value.__dataclass_fields__ else None
    else:
        return []
    return run_ids_in(found) if isinstance(found, str) else []


class RunPathTracer:
    """Notes, per file under ``root``, every run id seen in a call's frame; writes them to ``out``."""

    def __init__(self, root: str, out: str) -> None:
        self.root = os.path.realpath(root) + os.sep
        self.out = out
        self.seen: dict[str, set[str]] = {}
        self.lock = threading.Lock()

    def profile(self, frame: FrameType, event: str, arg: object) -> None:
        if event != "call":
            return
        filename = frame.f_code.co_filename
        if not filename.startswith(self.root):
            return
        ids = {i for value in list(frame.f_locals.values()) for i in run_ids_in(value)}
        if not ids:
            return
        relative = filename[len(self.root):]
        if os.environ.get("BROWSERQ_RUN_PATH_FUNCTIONS"):
            relative += ":" + frame.f_code.co_name
        known = self.seen.setdefault(relative, set())
        if ids <= known:
            return
        with self.lock:
            known |= ids
            self.dump()

    def dump(self) -> None:
        tmp = self.out + ".tmp"
        with open(tmp, "w") as handle:
            json.dump({name: sorted(ids) for name, ids in self.seen.items()}, handle)
        os.replace(tmp, self.out)

