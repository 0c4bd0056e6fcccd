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



class WritePaths:
    """For every SQL write (INSERT/UPDATE/DELETE) whose parameters carry a run id: the files under
    ``root`` on the *logical* path that led to it — the call stack, continued across asyncio tasks
    and ``asyncio.to_thread`` (each copies the context it was started from), kept in a context
    variable pushed and popped by the profile hook. That is the chain a reader follows from an entry
    point (``.delay()``, the Celery task) to each write of the run."""

    def __init__(self, root: str, out: str) -> None:
        import contextvars

        self.tracer = RunPathTracer(root, out)
        self.chain: contextvars.ContextVar[tuple[tuple[str, int], ...]] = contextvars.ContextVar(
            "browserq_run_path_chain", default=())

    def install(self) -> None:
        from sqlalchemy import event
        from sqlalchemy.engine import Engine

        event.listen(Engine, "before_cursor_execute", self.before_execute)

    def profile(self, frame: FrameType, event: str, arg: object) -> None:
        filename = frame.f_code.co_filename
        if not filename.startswith(self.tracer.root):
            return
        chain = self.chain.get()
        if event == "call":
            self.chain.set((*chain, (filename[len(self.tracer.root):], id(frame))))
        elif event == "return" and chain and chain[-1][1] == id(frame):
            self.chain.set(chain[:-1])

    def before_execute(self, conn: Any, cursor: Any, statement: str, parameters: Any,
                       context: Any, executemany: bool) -> None:
        if statement.lstrip()[:6].upper() not in ("INSERT", "UPDATE", "DELETE"):
            return
        ids = ids_in_parameters(parameters)
        if not ids:
            return
        files = {name for name, _ in self.chain.get()}
        with self.tracer.lock:
            changed = False
            for name in files:
                known = self.tracer.seen.setdefault(name, set())
                if not ids <= known:
                    known |= ids
                    changed = True
            if changed:
                self.tracer.dump()


def ids_in_parameters(parameters: Any) -> set[str]:
    """The run ids among a statement's bound parameters (a dict, or a sequence of them)."""
    if isinstance(parameters, dict):
        values: list[Any] = list(parameters.values())
    elif isinstance(parameters, list | tuple):
        values = [v for p in parameters for v in (p.values() if isinstance(p, dict) else [p])]
    else:
        return set()
    return {i for v in values for i in run_ids_in(v)}


class Tracers:
    """Both measures in one profile hook: who is handed the id, and who is on a write's path."""

    def __init__(self, root: str, out: str) -> None:
        self.handed = RunPathTracer(root, out)
        self.writes = WritePaths(root, out.replace(".json", ".writes.json"))
        self.writes.install()

    def profile(self, frame: FrameType, event: str, arg: object) -> None:
        self.writes.profile(frame, event, arg)
        self.handed.profile(frame, event, arg)

    def dump(self) -> None:
        self.handed.dump()
        self.writes.tracer.dump()
