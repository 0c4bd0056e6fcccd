"""``browserq prune`` and ``browserq export`` as a user types them (a subprocess), on a real run."""

from __future__ import annotations

import json
import zipfile
from datetime import timedelta
from pathlib import Path

from sqlalchemy import create_engine, update

from browserq.execute.runtime import Runtime
from browserq.store.models import Run, utcnow
from tests.cli.helpers import browserq, no_traceback
from tests.conftest import make_settings, template


def test_prune_and_export_from_the_command_line(tmp_path: Path, demo) -> None:
    settings = make_settings(tmp_path, database_url=f"sqlite:///{tmp_path / 'cli.db'}")
    shot = template(
        f"""
        steps:
          - {{action: navigate, url: "{demo.url}/"}}
          - {{action: screenshot, name: "shot.png"}}
        """
    )
    with Runtime(settings) as runtime:
        run_id = runtime.run_loaded(shot).run_id
        files = [settings.artifacts_dir / a.path for a in runtime.store.steps.artifacts(run_id)]
    engine = create_engine(settings.database_url)
    with engine.begin() as conn:  # it finished 40 days ago
        conn.execute(
            update(Run).where(Run.id == run_id).values(finished_at=utcnow() - timedelta(days=40))
        )
    engine.dispose()
    assert files and all(f.exists() for f in files)

    refused = browserq(tmp_path, "prune", "--older-than", "30d", "--status", "completed,running")
    assert (
        refused.returncode != 0
        and "runs that are running are never pruned" in refused.stderr + refused.stdout
    )
    bad = browserq(tmp_path, "prune", "--older-than", "30 days")
    assert bad.returncode != 0 and "is not like 30d" in bad.stderr + bad.stdout
    dry = browserq(tmp_path, "prune", "--older-than", "30d", "--dry-run")
    assert dry.returncode == 0 and "would delete: 1 run(s) (completed 1)" in dry.stdout, (
        dry.stdout + dry.stderr
    )
    asked = browserq(
        tmp_path, "prune", "--older-than", "30d"
    )  # stdin is no terminal: nobody to ask
    assert (
        asked.returncode != 0 and "refusing to delete without --yes" in asked.stderr + asked.stdout
    )
    assert all(f.exists() for f in files)

    exported = browserq(tmp_path, "export", run_id[:10], "-o", "archive.zip")
    assert exported.returncode == 0, exported.stderr
    with zipfile.ZipFile(tmp_path / "archive.zip") as archive:
        assert json.loads(archive.read("run.json"))["id"] == run_id
        assert any(n.startswith("artifacts/") for n in archive.namelist())

    done = browserq(tmp_path, "prune", "--older-than", "30d", "--yes")
    no_traceback(done)
    assert done.returncode == 0 and "deleted 1 run(s)" in done.stdout, done.stdout + done.stderr
    assert not any(f.exists() for f in files)
    shown = browserq(tmp_path, "show", run_id)
    assert shown.returncode != 0
