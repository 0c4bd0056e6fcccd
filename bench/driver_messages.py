"""Count, don't time: messages each way of ``scrape_and_form.py`` sends to the Playwright driver.

Runs the same iterations as ``scrape_and_form.py`` (hand-written Playwright, then browserq on
SQLite) and counts, per iteration, every message the Python client sends to its driver, by
protocol method (``Frame.queryCount``, ``Frame.evaluateExpression``, ``__waitInfo__``, …). Replies
are awaited for all but ``__waitInfo__`` (fire-and-forget), so "round trips" are the messages
without it. Messages are told apart by the thread that sent them: the hand-written way drives
Playwright on this script's main thread, browserq on its own loop thread.

    .venv/bin/python bench/driver_messages.py [--iterations 3] [--json]

Nothing is timed; the counts do not depend on the machine's load.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import threading
from collections import Counter
from pathlib import Path
from typing import Any

from playwright._impl.connection import Connection

sys.path.insert(0, str(Path(__file__).resolve().parent))
from scrape_and_form import TEMPLATES, HandWritten, ViaBrowserq, check

from browserq.demo.site import DemoSite
from browserq.logs import configure_logging
from browserq.settings import load_settings

#: Sent without waiting for a reply (the driver never answers it).
NO_REPLY = frozenset({"__waitInfo__"})


class DriverMeter:
    """Wraps the client's one send path and counts messages by (way, type.method)."""

    def __init__(self) -> None:
        self.counts: dict[str, Counter[str]] = {"playwright": Counter(), "browserq": Counter()}
        self._main = threading.main_thread()
        self._original = Connection.send_message_to_server

    def install(self) -> None:
        meter, original = self, self._original

        def counted(conn: Connection, obj: Any, method: str, params: Any, options: Any) -> Any:
            way = "playwright" if threading.current_thread() is meter._main else "browserq"
            meter.counts[way][f"{obj._type}.{method}"] += 1
            return original(conn, obj, method, params, options)

        Connection.send_message_to_server = counted  # type: ignore[method-assign]

    def uninstall(self) -> None:
        Connection.send_message_to_server = self._original  # type: ignore[method-assign]

    def take(self) -> dict[str, Counter[str]]:
        taken, self.counts = self.counts, {"playwright": Counter(), "browserq": Counter()}
        return taken


def totals(counts: Counter[str]) -> dict[str, Any]:
    """All messages, round trips (messages awaiting a reply) and the per-method counts."""
    no_reply = sum(n for key, n in counts.items() if key.split(".", 1)[1] in NO_REPLY)
    total = sum(counts.values())
    return {"messages": total, "round_trips": total - no_reply, "by_method": dict(counts.most_common())}


def run(iterations: int) -> dict[str, Any]:
    meter = DriverMeter()
    per_iteration: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="browserq-bench-") as tmp_name, DemoSite() as site:
        tmp = Path(tmp_name)
        settings = load_settings(
            database_url=f"sqlite:///{tmp / 'bench.db'}",
            templates_dir=TEMPLATES,
            artifacts_dir=tmp / "artifacts",
            log_level="WARNING",
        )
        configure_logging(settings)
        loop = asyncio.Runner()
        hand, bq = HandWritten(settings, site.url, tmp / "handwritten"), ViaBrowserq(settings, site.url)
        try:
            loop.run(hand.start())
            bq.start()
            for fn in (lambda: loop.run(hand.iterate()), bq.iterate):  # warm-up, not counted
                check("warm-up", *fn())
            meter.install()
            for _ in range(iterations):
                meter.take()
                check("playwright", *loop.run(hand.iterate()))
                check("browserq", *bq.iterate())
                per_iteration.append({way: totals(c) for way, c in meter.take().items()})
        finally:
            meter.uninstall()
            bq.stop()
            loop.run(hand.stop())
            loop.close()
    return {"benchmark": "driver_messages", "iterations": iterations, "per_iteration": per_iteration}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--iterations", type=int, default=3)
    parser.add_argument("--json", action="store_true", help="print the results as JSON only")
    args = parser.parse_args(argv)
    result = run(args.iterations)
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    for i, counts in enumerate(result["per_iteration"], 1):
        for way, figures in counts.items():
            print(f"iteration {i} {way:>10}: {figures['messages']} messages, {figures['round_trips']} round trips")
    last = result["per_iteration"][-1]["browserq"]["by_method"]
    print("browserq, last iteration, by method:")
    for key, n in last.items():
        print(f"  {n:>5}  {key}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
