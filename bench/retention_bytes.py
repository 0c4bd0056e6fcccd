"""Database bytes per run on PostgreSQL before and after ``prune`` (issue 23, retention).

Runs N real runs (in-process runtime, real Chromium, the demo site: a screenshot run and a failing
run alternately), stores each run's Celery result in the database backend, then measures
``sum(pg_total_relation_size)`` over every table of the schema: empty, after the runs, after
``prune_runs`` (plain ``DELETE``: the space stays allocated for reuse) and after ``VACUUM FULL``.

    PYTHONPATH=. python bench/retention_bytes.py [N]
"""

from __future__ import annotations

import sys
import tempfile
from datetime import timedelta
from pathlib import Path

from celery import Celery
from sqlalchemy import create_engine, text

from browserq.demo.site import DemoSite
from browserq.execute.retention import prune_runs
from browserq.execute.runtime import Runtime
from browserq.store import normalize_url
from browserq.store.models import utcnow
from browserq.tasks.retention import result_forgetter
from tests.conftest import make_settings, template
from tests.support.postgres import create_database, drop_database, scratch_name

SIZE = """SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c
JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public' AND c.relkind = 'r'"""


PER_TABLE = """SELECT c.relname, pg_total_relation_size(c.oid) FROM pg_class c
JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public' AND c.relkind = 'r'"""


def _tables(url: str) -> dict[str, int]:
    engine = create_engine(normalize_url(url))
    with engine.connect() as conn:
        sizes = {row[0]: int(row[1]) for row in conn.execute(text(PER_TABLE))}
    engine.dispose()
    return sizes


def _bytes(url: str, *, vacuum: bool = False) -> int:
    engine = create_engine(normalize_url(url), isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        if vacuum:
            conn.execute(text("VACUUM FULL"))
        value = int(conn.execute(text(SIZE)).scalar_one())
    engine.dispose()
    return value


def main(n: int) -> None:
    name = scratch_name("browserq_retention_bench")
    url = create_database(name)
    try:
        with DemoSite() as site, tempfile.TemporaryDirectory() as tmp:
            runtime = Runtime(make_settings(Path(tmp), database_url=url)).start()
            backend = Celery("bench", set_as_current=False)
            backend.conf.result_backend = runtime.settings.effective_result_backend
            backend.backend.store_result("warm-up", {}, "SUCCESS")  # creates celery_taskmeta
            backend.backend.forget("warm-up")
            empty = _bytes(url, vacuum=True)
            empty_tables = _tables(url)
            shot = template(
                f'steps:\n  - {{action: navigate, url: "{site.url}/"}}\n'
                '  - {action: screenshot, name: "shot.png"}\n'
            )
            broken = template(
                f'settings: {{step_timeout_s: 5}}\nsteps:\n  - {{action: navigate, url: "{site.url}/"}}\n'
                '  - {action: click, selector: "#nope", timeout_s: 1, retries: 0}\n'
            )
            for i in range(n):
                outcome = runtime.run_loaded(shot if i % 2 == 0 else broken)
                backend.backend.store_result(outcome.run_id, outcome.outputs, "SUCCESS")
            full = _bytes(url, vacuum=True)
            full_tables = _tables(url)
            report = prune_runs(
                runtime.store,
                runtime.artifacts,
                older_than=timedelta(days=1),
                now=utcnow() + timedelta(days=2),
                forget=result_forgetter(runtime.settings),
            )
            after = _bytes(url)
            vacuumed = _bytes(url, vacuum=True)
            left_tables = _tables(url)
            runtime.stop()
        print(
            f"runs: {n} (pruned {report.runs}, {report.rows} rows, {report.artifact_bytes} artifact bytes)"
        )
        print(f"empty schema:           {empty:>10} bytes")
        print(
            f"after {n} runs (vacuumed): {full:>10} bytes = {(full - empty) / n / 1024:.2f} KB per run"
        )
        print(
            f"after prune:            {after:>10} bytes = {(after - empty) / n / 1024:.2f} KB per run (space kept for reuse)"
        )
        print(
            f"after prune+VACUUM FULL:{vacuumed:>10} bytes = {(vacuumed - empty) / n / 1024:.2f} KB per run"
        )
        for table, size in sorted(
            full_tables.items(), key=lambda kv: empty_tables.get(kv[0], 0) - kv[1]
        ):
            grown, left = (
                size - empty_tables.get(table, 0),
                left_tables[table] - empty_tables.get(table, 0),
            )
            if grown or left:
                print(
                    f"  {table:<20} {grown / n / 1024:6.2f} KB per run, {left / n / 1024:6.2f} after prune+vacuum"
                )
    finally:
        drop_database(name)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 40)
