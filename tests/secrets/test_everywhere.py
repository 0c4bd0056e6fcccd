"""One secret, every way in and every way out: nothing browserq writes holds it in any form.

One secret with awkward characters is planted through every path that used to leak it — a
``?token=`` URL, a form filled and posted with ``human_input`` off and on, an HTTP Basic auth URL,
a page that echoes it (HTML-escaped, JSON-escaped, into the console, into a cookie), a failing
step (failure snapshot, console, network, trace), checkpoints — through a real Celery worker on
Redis with a Redis result backend (``apply_async`` and a bare ``send_task``), and through
``browserq run`` without ``BROWSERQ_SECRET_KEY`` on SQLite. Then every byte browserq wrote is
searched for every form of the secret (:mod:`tests.secrets.forms`): a ``pg_dump`` of the database
(bytea decoded), the SQLite files, every artifact with zips unzipped (member names too), the
worker's log, the CLI's output, and every Redis key and value.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
import sqlalchemy as sa

from tests.conftest import PG_ADMIN_URL, REPO, producer_env
from tests.e2e.conftest import WorkerEnv, celery_worker, wait_until, worker_env
from tests.secrets.forms import files_under, find_leaks, keystrokes, secret_forms
from tests.secrets.site import BASIC_USER, SECRET, TEMPLATE, params
from tests.support.postgres import create_database, database_url, drop_database, scratch_name
from tests.support.redis import SECRETS_DB, empty_database, redis_url
from tests.support.workers import browserq_env

pytestmark = pytest.mark.slow

#: A Redis database of its own, so "every key" means this test's keys.
REDIS_DB_URL = redis_url(SECRETS_DB)
@pytest.fixture(scope="module")
def templates(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("secret-templates")
    for name, human in (("secret_plain", "false"), ("secret_human", "true")):
        (directory / f"{name}.yaml").write_text(TEMPLATE.format(name=name, human=human, user=BASIC_USER).lstrip())
    return directory


@pytest.fixture(scope="module")
def database() -> Iterator[str]:
    name = scratch_name("browserq_secrets")
    create_database(name)
    yield name
    drop_database(name)


@pytest.fixture(scope="module")
def redis_db() -> Iterator[redis.Redis]:
    client = redis.Redis.from_url(REDIS_DB_URL)
    empty_database(client)  # leftovers of an earlier run of this test
    yield client
    empty_database(client)
    client.close()


@pytest.fixture(scope="module")
def worker(tmp_path_factory: pytest.TempPathFactory, database: str, templates: Path, redis_db) -> Iterator[WorkerEnv]:
    pg_url = database_url(database)
    config = worker_env(tmp_path_factory.mktemp("secret-worker"), pg_url, REDIS_DB_URL, templates)
    config.env["BROWSERQ_RESULT_BACKEND"] = REDIS_DB_URL
    with producer_env(config.env), celery_worker(config, concurrency=1, timeout_s=120):
        yield config


def _finished(pg_url: str, run_id: str) -> Any:
    from browserq.store import Store

    store = Store(pg_url)
    try:
        return store.runs.get_run(run_id)
    finally:
        store.dispose()


def _pg_dump(database: str) -> bytes:
    admin = sa.engine.make_url(PG_ADMIN_URL)
    dump = subprocess.run(
        ["pg_dump", "-h", admin.host or "127.0.0.1", "-p", str(admin.port or 5432), "-U", admin.username or "postgres",
         "--no-owner", database],
        capture_output=True, check=True, timeout=120,
    ).stdout
    # bytea columns (the database result backend's) are dumped as hex: add their bytes too.
    decoded = b"\n".join(bytes.fromhex(h.decode()) for h in re.findall(rb"\\{1,2}x([0-9a-f]+)", dump) if len(h) % 2 == 0)
    return dump + b"\n" + decoded


def _redis_everything(client: redis.Redis) -> Iterator[tuple[str, bytes]]:
    for key in client.scan_iter(count=500):
        kind = client.type(key).decode()
        if kind == "string":
            value = [client.get(key) or b""]
        elif kind == "list":
            value = client.lrange(key, 0, -1)
        elif kind == "hash":
            value = [b for pair in client.hgetall(key).items() for b in pair]
        elif kind == "set":
            value = list(client.smembers(key))
        elif kind == "zset":
            value = [m for m, _ in client.zrange(key, 0, -1, withscores=True)]
        elif kind == "stream":
            value = [json.dumps([[i.decode(), {k.decode(): v.decode() for k, v in f.items()}]
                                 for i, f in client.xrange(key)]).encode()]
        else:
            value = []
        yield f"redis key {key!r} (name)", key
        yield f"redis key {key!r}", b"\n".join(value)


def _browserq(args: list[str], env: dict[str, str], stdin: str | None = None) -> subprocess.CompletedProcess[bytes]:
    exe = Path(sys.executable).with_name("browserq")
    return subprocess.run([str(exe), *args], env=env, cwd=REPO, capture_output=True, timeout=300,
                          input=stdin.encode() if stdin is not None else None)


@pytest.mark.timeout(900)  # ~100 s alone; a loaded machine (4 test workers on 2 cores) may triple it
def test_a_secret_appears_in_no_form_in_anything_browserq_writes(
    secret_site: str, worker: WorkerEnv, database: str, redis_db: redis.Redis, templates: Path, tmp_path: Path
) -> None:
    from browserq import celery_app, run_template

    pg_url = worker.env["BROWSERQ_DATABASE_URL"]
    blobs: list[tuple[str, bytes]] = []

    # What Flower shows of a task comes from its task-received event: capture those too.
    received: list[dict[str, Any]] = []
    probes: list[dict[str, Any]] = []  # the events this test sends itself, to know the receiver listens
    receivers: list[Any] = []

    def listen() -> None:
        with celery_app.app.connection_for_read() as conn:
            receiver = celery_app.app.events.Receiver(
                conn, handlers={"task-received": lambda e: (probes if str(e.get("uuid")).startswith("probe-")
                                                            else received).append(e)},
                routing_key="task.#",
            )
            receivers.append(receiver)
            receiver.capture(limit=None, timeout=None, wakeup=False)

    listener = threading.Thread(target=listen, daemon=True)
    listener.start()
    wait_until(lambda: receivers, timeout_s=30)

    def probe_seen() -> bool:  # capture() binds its queue after the receiver exists: a probe event says when
        with celery_app.app.events.default_dispatcher() as dispatcher:
            dispatcher.send("task-received", uuid=f"probe-{uuid.uuid4().hex}")
        return bool(probes)

    wait_until(probe_seen, timeout_s=30)

    # 1. The producer's way in, and a bare send_task (validated by the worker), on Redis.
    produced = run_template.apply_async(args=["secret_plain"], kwargs={"params": params(secret_site)})
    produced.get(timeout=240, propagate=False)
    sent = celery_app.app.send_task(
        "browserq.run_template", args=["secret_human"], kwargs={"params": params(secret_site)}, queue=worker.queue
    )
    sent.get(timeout=240, propagate=False)
    sent_run = uuid.UUID(sent.id).hex
    for run_id in (produced.id, sent_run):
        run = _finished(pg_url, run_id)
        assert run is not None and run.status == "failed" and run.error_code == "ASSERTION_FAILED", run
        assert run.outputs["echoed"] == "[secret:password]", run.outputs  # the page did echo it
        assert run.checkpoint and "[secret:password]" in run.checkpoint["url"]
    wait_until(lambda: len(received) >= 2, timeout_s=60)
    receivers[0].should_stop = True
    assert {e.get("uuid") for e in received} == {produced.id, sent.id}, received
    blobs += [(f"task-received event {e.get('uuid')}", json.dumps(e, ensure_ascii=False).encode()) for e in received]
    assert any("[secret:password]" in str(e.get("kwargs")) for e in received)  # what Flower shows

    # 2. browserq run, in-process, no BROWSERQ_SECRET_KEY, SQLite, the secret from a file and stdin.
    cli_dir = tmp_path / "cli"
    cli_dir.mkdir()
    secret_file = cli_dir / "password.txt"
    secret_file.write_text(SECRET + "\n")
    env = browserq_env({
        "BROWSERQ_DATABASE_URL": f"sqlite:///{cli_dir / 'browserq.db'}",
        "BROWSERQ_TEMPLATES_DIR": str(templates),
        "BROWSERQ_ARTIFACTS_DIR": str(cli_dir / "artifacts"),
        "BROWSERQ_BROKER_URL": REDIS_DB_URL,
    })
    p = params(secret_site)
    for template, source, stdin in (("secret_human", f"@{secret_file}", None), ("secret_plain", "@-", SECRET + "\n")):
        cli = _browserq(["run", template, "-p", f"base={p['base']}", "-p", f"host={p['host']}",
                         "-p", f"password={source}"], env, stdin)
        blobs += [(f"browserq run {template} stdout", cli.stdout), (f"browserq run {template} stderr", cli.stderr)]
        found = re.search(rb"Run ([0-9a-f]{32})", cli.stdout)
        assert cli.returncode == 1 and found, cli.stdout.decode(errors="replace") + cli.stderr.decode(errors="replace")
        cli_run = found.group(1).decode()
        for args in (["show", cli_run, "--json"], ["show", cli_run]):
            shown = _browserq(args, env)
            assert shown.returncode == 0, shown.stderr
            blobs.append((f"browserq {' '.join(args)}", shown.stdout + shown.stderr))
        assert b"ASSERTION_FAILED" in cli.stdout and b"[secret:password]" in blobs[-2][1]

    # 3. Every byte written: PostgreSQL, SQLite, artifacts (zips unzipped), logs, Redis.
    blobs.append((f"pg_dump {database}", _pg_dump(database)))
    for path in sorted(cli_dir.glob("browserq.db*")):
        blobs.append((str(path), path.read_bytes()))
    artifacts = list(files_under(Path(worker.env["BROWSERQ_ARTIFACTS_DIR"]))) + list(files_under(cli_dir / "artifacts"))
    assert any(name.endswith("trace.zip!trace.network") for name, _ in artifacts)
    assert sum(name.endswith("failure.html") for name, _ in artifacts) == 4
    blobs += artifacts
    blobs.append(("worker log", worker.log.read_bytes()))
    blobs += list(_redis_everything(redis_db))
    assert any("celery-task-meta" in name for name, _ in blobs)  # results did land in Redis

    forms = secret_forms(SECRET, basic_user=BASIC_USER)
    leaks = find_leaks(blobs, forms)
    assert not leaks, f"{len(leaks)} leaks:\n" + "\n".join(map(str, leaks[:40]))
    # Typed key by key (human_input): the keyboard actions of a trace never spell it either.
    for name, data in artifacts:
        if name.endswith(".trace"):
            assert SECRET[:4] not in keystrokes(data), name
