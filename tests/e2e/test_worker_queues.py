"""``browserq worker -Q other`` adds queues to browserq's own: runs and the sweeper keep being served."""

from __future__ import annotations

import json
import sys
import uuid
from pathlib import Path

import pytest

from browserq.errors import BrowserqError
from tests.conftest import make_settings
from tests.e2e.conftest import REDIS_URL, run_producer, worker_env
from tests.support.processes import stop
from tests.support.workers import spawn_worker, wait_for_log

pytestmark = pytest.mark.slow


def test_worker_argv_keeps_browserqs_queues(tmp_path: Path) -> None:
    from browserq.cli import worker_argv

    settings = make_settings(tmp_path, queue="runs")
    for extra in (["-Q", "other"], ["-Qother"], ["--queues", "other"], ["--queues=other"]):
        argv = worker_argv(settings, 2, "INFO", [*extra, "-n", "w@h"])
        assert argv[argv.index("-Q") + 1] == "runs,runs.sweep,runs.webhooks,other", extra
        assert argv.count("-Q") == 1 and argv[-2:] == ["-n", "w@h"]
    argv = worker_argv(settings, 2, "INFO", ["-Q", "runs.sweep,a", "-Q", "b", "-X", "runs"])
    assert argv[argv.index("-Q") + 1] == "runs,runs.sweep,runs.webhooks,a,b" and argv[-2:] == ["-X", "runs"]
    with pytest.raises(BrowserqError, match="cannot be excluded"):
        worker_argv(settings, 2, "INFO", ["-X", "runs.sweep"])


def test_worker_with_extra_queue_serves_it_the_runs_queue_and_the_sweeper(tmp_path, pg_url, e2e_templates, demo) -> None:
    config = worker_env(tmp_path, pg_url, REDIS_URL, e2e_templates)
    config.env["BROWSERQ_RESULT_BACKEND"] = REDIS_URL
    config.env["BROWSERQ_SWEEP_IN_WORKERS"] = "false"  # this test is about the sweeper's queue
    other = f"other_{uuid.uuid4().hex[:8]}"
    proc = spawn_worker(
        [sys.executable, "-m", "browserq.cli", "worker", "-c", "1", "-Q", other,
         "-n", f"{config.queue}@%h", "--without-gossip", "--without-mingle"],
        config.env, config.log,
    )
    try:
        wait_for_log(proc, config.log, lambda text: "ready." in text, 90, "the worker to start")
        code = (
            "import json\n"
            "from browserq import run_template\n"
            "from browserq.celery_app import SWEEP_TASK_NAME, app\n"
            f"p = {{'start_url': '{demo.url}/quotes/', 'max_pages': 1}}\n"
            f"extra = run_template.apply_async(args=['quotes'], kwargs={{'params': p}}, queue={other!r})\n"
            "default = run_template.delay('quotes', params=p)\n"
            f"sweep = app.send_task(SWEEP_TASK_NAME, queue={config.queue + '.sweep'!r})\n"
            # a delivery nobody recorded: the task finds nothing to claim and says so
            f"hook = app.send_task('browserq.deliver_webhook', args=[10**12, 1], queue={config.queue + '.webhooks'!r})\n"
            "print(json.dumps([extra.get(timeout=90)['status'], default.get(timeout=90)['status'],"
            " sweep.get(timeout=90), hook.get(timeout=90)]))\n"
        )
        done = run_producer(config, code, timeout=300)
        assert done.returncode == 0, done.stderr[-3000:]
        extra, default, swept, hook = json.loads(done.stdout.strip().splitlines()[-1])
        assert (extra, default, hook) == ("completed", "completed", "done")
        assert set(swept) == {"requeued"}
    finally:
        stop(proc, 60, group=True)
