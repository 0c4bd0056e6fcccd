"""``bench/soak_memory.py --diagnose``: put on a worker's PYTHONPATH, this turns on tracemalloc in
every process of it and dumps, whenever the soak writes a new tag into ``$SOAK_DIAG_DIR/trigger``,
the process's top allocation sites and live objects by type, each against its first dump."""

from __future__ import annotations

import os

if os.environ.get("SOAK_DIAG_DIR"):
    import collections
    import gc
    import threading
    import time
    import tracemalloc
    from pathlib import Path

    OUT = Path(os.environ["SOAK_DIAG_DIR"])
    tracemalloc.start(int(os.environ.get("SOAK_DIAG_FRAMES", "8")))
    _first: dict[str, object] = {}

    def _types() -> collections.Counter[str]:
        return collections.Counter(f"{type(o).__module__}.{type(o).__qualname__}" for o in gc.get_objects())

    def _dump(tag: str) -> None:
        gc.collect()
        snap = tracemalloc.take_snapshot().filter_traces(
            (tracemalloc.Filter(False, tracemalloc.__file__), tracemalloc.Filter(False, "<frozen importlib._bootstrap>")))
        types = _types()
        first = _first.setdefault("snap", snap)
        first_types = _first.setdefault("types", types)
        lines = [f"pid {os.getpid()} tag {tag} traced {tracemalloc.get_traced_memory()[0] / 2**20:.1f} MiB",
                 "== growth by traceback since the first dump (top 25)"]
        for stat in snap.compare_to(first, "traceback")[:25]:
            lines.append(f"{stat.size_diff / 1024:+9.1f} KiB {stat.count_diff:+7d} blocks  (now {stat.size / 1024:.0f} KiB)")
            lines += [f"      {frame}" for frame in stat.traceback.format()[-16:]]
        lines.append("== growth of live objects by type since the first dump (top 40)")
        diff = collections.Counter({k: v - first_types.get(k, 0) for k, v in types.items()})
        lines += [f"{n:+8d}  {name}  (now {types[name]})" for name, n in diff.most_common(40)]
        (OUT / f"dump-{os.getpid()}-{tag}.txt").write_text("\n".join(lines) + "\n")

    def _watch() -> None:
        seen = None
        while True:
            time.sleep(2)
            try:
                tag = (OUT / "trigger").read_text()
            except OSError:
                continue
            if tag != seen:
                seen = tag
                try:
                    _dump(tag)
                except Exception as exc:  # a diagnostic never breaks the worker
                    (OUT / f"error-{os.getpid()}.txt").write_text(repr(exc))

    def _start() -> None:
        threading.Thread(target=_watch, name="soak-diag", daemon=True).start()

    _start()
    os.register_at_fork(after_in_child=_start)
