"""Plumbing the tests share, written once: scratch PostgreSQL databases (:mod:`.postgres`), Redis
databases and readiness (:mod:`.redis`), waiting for a condition (:mod:`.polling`), reading and
killing processes through ``/proc`` (:mod:`.processes`) and starting real workers in subprocesses
(:mod:`.workers`).

Why a package and not conftest.py: these are plain functions that test modules, conftest files and
helper scripts import by name; fixtures stay in the conftest files and call into here. Nothing in
here imports browserq, so every suite can use it without paying for an import of the package.
"""

from __future__ import annotations

from pathlib import Path

#: The repository's root (the working directory and ``PYTHONPATH`` of subprocesses).
REPO = Path(__file__).resolve().parents[2]
