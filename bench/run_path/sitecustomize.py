"""Imported at start-up by a process whose ``PYTHONPATH`` begins with this folder (the worker that
``bench/run_path_files.py`` starts): records which files of browserq are handed a run id.

Inactive unless ``BROWSERQ_RUN_PATH_TRACE`` names the JSON file to write. Every call into a file under
``BROWSERQ_RUN_PATH_ROOT`` is looked at once: the run ids among its arguments and locals (32-hex
strings, and the ``run_id`` of a dict or dataclass argument) are noted for that file; and for each
SQL write carrying a run id, the files on the logical call path that led to it (``*.writes.json``).
The files are rewritten whenever a new (file, id) pair appears, so nothing depends on a clean exit.
"""

from __future__ import annotations

import os

if os.environ.get("BROWSERQ_RUN_PATH_TRACE"):
    import sys
    import threading

    sys.path.insert(0, os.path.dirname(__file__))
    from tracer import Tracers

    _tracer = Tracers(os.environ["BROWSERQ_RUN_PATH_ROOT"], os.environ["BROWSERQ_RUN_PATH_TRACE"])
    sys.setprofile(_tracer.profile)
    threading.setprofile(_tracer.profile)
