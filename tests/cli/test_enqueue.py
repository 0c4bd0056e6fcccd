"""``browserq enqueue`` and ``browserq show --follow`` as a user runs them: subprocesses against a
real prefork worker (Redis broker, PostgreSQL store and result backend).

What is checked: the run id alone on stdout, progress on stderr, the outcome and the exit code
(0 completed, 1 failed, 2 refused input, 3 broker down, 4 --timeout); refused input is one line
and records nothing; a secret param is never taken from the command line; ``show --follow``
follows a run to its end (from the result backend, or from the store's step records when the
backend cannot be read) and then prints the usual ``show`` output.
"""

from __future__ import annotations

import re
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from browserq.cli.enqueue import inline_secrets, one_line
from browserq.errors import ParamError
from tests.cli.helpers import no_traceback
from tests.conftest import REPO, TEST_SECRET_KEY
from tests.support.cli_zygote import browserq_command
from tests.support.progress_worker import GATED_STEPS_OF, STEPS_OF, ProgressWorker, progress_worker
from tests.support.redis import BROKER_DB, redis_url

RUN_ID = re.compile(r"^[0-9a-f]{32}$")


# --- without a worker --------------------------------------------------------------------------
def test_errors_are_told_on_one_line() -> None:
    error = ParamError("prog_steps@1.0.0", ["base_url: not a URL", "nope: unknown param"])
    assert one_line(error) == "invalid params for template prog_steps@1.0.0: base_url: not a URL; nope: unknown param"
    assert one_line(ValueError("plain")) == "plain"


def test_secret_params_count_as_inline_unless_read_from_a_file_or_stdin() -> None:
    pairs = ["password=hunter2", "user=me", "token=@-", "pin=@/run/pin", "other=@@literal"]
    assert inline_secrets(pairs, {"password", "token", "pin", "other"}) == ["password", "other"]
    assert inline_secrets(["password="], {"password"}) == ["password"]


# --- against a worker ------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def worker(tmp_path_factory: pytest.TempPathFactory, pg_url: str) -> Iterator[ProgressWorker]:
    with progress_worker(tmp_path_factory.mktemp("enqueue"), pg_url, redis_url(BROKER_DB),
                         secret_key=TEST_SECRET_KEY) as w:
        yield w


def browserq(worker: ProgressWorker, *args: str, stdin: str | None = None, timeout: float = 180,
             **env: str) -> subprocess.CompletedProcess[str]:
    return browserq_command(args, cwd=REPO, input=stdin, env={**worker.env, "COLUMNS": "200", **env},
                            timeout=timeout)


def runs_of(worker: ProgressWorker, template: str) -> list[str]:
    done = browserq(worker, "runs", "--template", template, "-n", "1000")
    assert done.returncode == 0, done.stderr
    return [line.split("\t")[0] for line in done.stdout.splitlines()[1:]]


def test_enqueue_wait_prints_the_run_id_its_progress_and_the_result(worker, demo) -> None:
    done = browserq(worker, "enqueue", "prog_steps", "-p", f"base_url={demo.url}", "--wait")
    no_traceback(done)
    assert done.returncode == 0, done.stderr[-2000:] + worker.log.read_text()[-2000:]
    lines = done.stdout.splitlines()
    assert RUN_ID.match(lines[0]), done.stdout
    run_id = lines[0]
    assert f"Run {run_id} COMPLETED" in done.stdout
    progress = [line for line in done.stderr.splitlines() if line.startswith("step ")]
    assert progress, f"no progress on stderr: {done.stderr}"
    assert all(f" of {STEPS_OF}" in line for line in progress), progress
    assert any("navigate" in line or "wait" in line for line in progress), progress
    assert run_id in runs_of(worker, "prog_steps")


def test_enqueue_wait_of_a_failing_run_prints_the_error_and_exits_1(worker, demo) -> None:
    done = browserq(worker, "enqueue", "prog_fail", "-p", f"base_url={demo.url}", "--wait")
    no_traceback(done)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "FAILED" in done.stdout and "ASSERTION_FAILED at step 2" in done.stdout, done.stdout


def test_bad_input_is_one_line_exit_2_and_nothing_is_enqueued(worker, demo) -> None:
    before = runs_of(worker, "prog_steps")
    for args, says in (
        (["prog_steps", "-p", "base_url=ftp://nope", "-p", "nope=1"], "invalid params for template prog_steps@1.0.0: "),
        (["prog_steps"], "base_url"),
        (["no_such_template"], "no_such_template"),
        (["prog_steps", "-p", f"base_url={demo.url}", "--queue", "amq.x"], "queue 'amq.x' must be"),
        (["prog_steps", "-p", "oops"], "-p expects key=value"),
        (["prog_steps", "-p", f"base_url={demo.url}", "--notify", "ftp://x.example/h"], "http:// or https://"),
        (["prog_steps", "-p", f"base_url={demo.url}", "--notify", "https://x.example/h"],
         "BROWSERQ_WEBHOOK_SECRET is not set"),
    ):
        done = browserq(worker, "enqueue", *args, "--wait")
        no_traceback(done)
        assert done.returncode == 2, (args, done.stdout, done.stderr)
        assert done.stdout == "" and len(done.stderr.strip().splitlines()) == 1, (args, done.stderr)
        assert done.stderr.startswith("error: ") and says in done.stderr, (args, done.stderr)
    assert runs_of(worker, "prog_steps") == before


def test_a_secret_param_is_refused_from_the_command_line_and_taken_from_stdin(worker, demo) -> None:
    before = runs_of(worker, "prog_secret")
    refused = browserq(worker, "enqueue", "prog_secret", "-p", f"base_url={demo.url}", "-p", "password=hunter2-secret")
    assert refused.returncode == 2 and "password=@-" in refused.stderr, refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1
    assert runs_of(worker, "prog_secret") == before
    done = browserq(worker, "enqueue", "prog_secret", "-p", f"base_url={demo.url}", "-p", "password=@-", "--wait",
                    stdin="hunter2-secret\n")
    assert done.returncode == 0, done.stdout + done.stderr
    shown = browserq(worker, "show", done.stdout.splitlines()[0], "--json")
    assert "hunter2-secret" not in done.stdout + done.stderr + shown.stdout


def test_a_broker_that_is_down_is_one_line_exit_3_and_nothing_is_recorded(worker, demo) -> None:
    before = runs_of(worker, "prog_steps")
    done = browserq(worker, "enqueue", "prog_steps", "-p", f"base_url={demo.url}",
                    BROWSERQ_BROKER_URL="redis://127.0.0.1:1/0")
    no_traceback(done)
    assert done.returncode == 3, done.stdout + done.stderr
    assert "could not send the run to the broker at redis://127.0.0.1:1/0" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and done.stdout == ""
    assert runs_of(worker, "prog_steps") == before


def test_wait_gives_up_after_the_timeout_and_the_run_goes_on(worker, demo) -> None:
    done = browserq(worker, "enqueue", "prog_steps", "-p", f"base_url={demo.url}", "--timeout", "0.5")
    assert done.returncode == 4, done.stdout + done.stderr
    run_id = done.stdout.splitlines()[0]
    assert f"browserq show {run_id} --follow" in done.stderr
    followed = browserq(worker, "show", run_id, "--follow")
    assert followed.returncode == 0 and "status\tcompleted" in followed.stdout, followed.stderr


def follow_a_held_run(worker: ProgressWorker, demo, id_chars: int = 36, **env: str) -> subprocess.CompletedProcess[str]:
    """``browserq show RUN --follow`` of a run held at its second step (the demo site's gate) until
    the follower has printed a step line: it is certain to see the run under way."""
    gate = f"follow-{uuid.uuid4().hex[:8]}"
    sent = browserq(worker, "enqueue", "prog_gated", "-p", f"base_url={demo.url}", "-p", f"gate={gate}")
    assert sent.returncode == 0, sent.stderr
    run_id = sent.stdout.strip()
    follower = subprocess.Popen([sys.executable, "-m", "browserq.cli", "show", run_id[:id_chars], "--follow"],
                                cwd=REPO, env={**worker.env, "COLUMNS": "200", **env}, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    seen: list[str] = []
    stepping = threading.Event()

    def read_stderr() -> None:
        assert follower.stderr is not None
        for line in follower.stderr:
            seen.append(line)
            if line.startswith("step "):
                stepping.set()

    reader = threading.Thread(target=read_stderr, daemon=True)
    reader.start()
    try:
        assert stepping.wait(180), f"the follower showed no step of run {run_id}: {''.join(seen)}"
    finally:
        demo.open_gate(gate)
    stdout = follower.stdout.read() if follower.stdout else ""
    follower.wait(180)
    reader.join(30)
    return subprocess.CompletedProcess(follower.args, follower.returncode, stdout, "".join(seen))


def test_show_follow_follows_a_run_to_its_end_then_shows_it(worker, demo) -> None:
    done = follow_a_held_run(worker, demo, id_chars=12)  # a unique prefix of the id will do
    no_traceback(done)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("run\t"), done.stdout
    assert "\nstatus\tcompleted\n" in done.stdout and "\nSteps\n" in done.stdout, done.stdout
    steps = [line for line in done.stderr.splitlines() if line.startswith("step ")]
    assert steps and all(f" of {GATED_STEPS_OF}" in line for line in steps), done.stderr


def test_show_follow_reads_the_store_when_the_result_backend_cannot_be_read(worker, demo) -> None:
    done = follow_a_held_run(worker, demo, BROWSERQ_RESULT_BACKEND="redis://127.0.0.1:1/0")
    no_traceback(done)
    assert done.returncode == 0 and "\nstatus\tcompleted\n" in done.stdout, done.stderr
    steps = [line for line in done.stderr.splitlines() if line.startswith("step ")]
    assert steps and all(f" of {GATED_STEPS_OF}" in line for line in steps), done.stderr


def test_show_follow_of_a_finished_run_is_plain_show(worker, demo) -> None:
    sent = browserq(worker, "enqueue", "prog_fail", "-p", f"base_url={demo.url}", "--wait")
    run_id = sent.stdout.splitlines()[0]
    followed, shown = browserq(worker, "show", run_id, "--follow"), browserq(worker, "show", run_id)
    assert followed.returncode == shown.returncode == 0
    assert followed.stdout == shown.stdout and followed.stderr == ""


def test_readme_states_the_exit_codes() -> None:
    readme = Path(REPO / "docs" / "operating.md").read_text()
    section = readme.split("## Sending runs from the command line", 1)[1].split("\n## ", 1)[0]
    for code in ("0", "1", "2", "3", "4"):
        assert f"`{code}`" in section, code
