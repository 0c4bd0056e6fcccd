"""The shared test plumbing (tests/support/) against the real things it wraps: PostgreSQL, Redis,
``/proc`` and subprocesses. Every suite leans on it, so a broken helper must fail here, by name,
and not as a mystery in a chaos test."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from types import SimpleNamespace
from urllib.request import urlopen

import psycopg
import pytest
import redis

from tests.support import REPO, ordering
from tests.support import redis as suite_redis
from tests.support.http import free_port, serve_http
from tests.support.polling import poll, wait_until
from tests.support.postgres import (
    admin_connection,
    create_database,
    database_url,
    drop_database,
    scratch_database,
    scratch_name,
)
from tests.support.processes import (
    alive,
    cmdline,
    descendants,
    descends_from,
    is_alive,
    parent_of,
    stop,
    tagged_pids,
)
from tests.support.redis import (
    LIMITS_DB,
    MACHINE_SERVER,
    delete_prefix,
    redis_url,
    server,
    wait_for_redis,
)
from tests.support.servers import RedisServer, port_open
from tests.support.templates import template_file, write_templates
from tests.support.workers import browserq_env, read_log, spawn_logged, spawn_worker, wait_for_log
from tests.support.zygote import ForkedProcess

#: A process that starts a child and both sleep: a tiny process tree.
TREE = "import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); " \
       "print('ready', flush=True); time.sleep(60)"


# --- polling ---------------------------------------------------------------------------------------
def test_wait_until_returns_the_first_truthy_value() -> None:
    calls = iter([0, "", None, "found"])
    assert wait_until(lambda: next(calls), 5, interval_s=0) == "found"


def test_wait_until_names_what_it_waited_for() -> None:
    with pytest.raises(AssertionError, match=r"timed out after 0\.05 s waiting for the moon"):
        wait_until(lambda: False, 0.05, "the moon", interval_s=0.01)


def test_poll_returns_the_last_value_at_the_deadline() -> None:
    seen = []
    assert poll(lambda: seen.append(1) or len(seen), lambda n: n >= 3, 5, interval_s=0) == 3
    assert poll(lambda: "not yet", lambda v: False, 0.05, interval_s=0.01) == "not yet"


# --- postgres --------------------------------------------------------------------------------------
def _databases() -> set[str]:
    with admin_connection() as conn:
        return {row[0] for row in conn.execute("select datname from pg_database")}


def test_scratch_database_is_created_usable_and_dropped() -> None:
    with scratch_database("browserq_support") as url:
        name = url.rsplit("/", 1)[1]
        assert name.startswith("browserq_support_") and name in _databases()
        assert url == database_url(name) and url.startswith("postgresql+psycopg://")
        with psycopg.connect(url.replace("+psycopg", "")) as conn:
            assert conn.execute("select 1").fetchone() == (1,)
    assert name not in _databases()


def test_create_database_replaces_a_leftover_and_drop_ignores_connections() -> None:
    name = scratch_name("browserq_support")
    url = create_database(name)
    with psycopg.connect(url.replace("+psycopg", ""), autocommit=True) as conn:
        conn.execute("create table leftover (x int)")
    create_database(name)  # a crashed earlier session's database: replaced by an empty one
    held = psycopg.connect(url.replace("+psycopg", ""))
    try:
        assert held.execute("select count(*) from pg_tables where tablename = 'leftover'").fetchone() == (0,)
        drop_database(name)  # even while `held` is connected (a killed worker's connection)
        assert name not in _databases()
    finally:
        held.close()
    drop_database(name)  # dropping a database that is gone is not an error


def test_admin_connection_to_a_dead_server_fails_the_test_with_the_url() -> None:
    dead = f"postgresql://postgres@127.0.0.1:{free_port()}/postgres"
    with pytest.raises(pytest.fail.Exception, match=r"PostgreSQL is not reachable at .*127\.0\.0\.1"):
        admin_connection(dead)


# --- redis -----------------------------------------------------------------------------------------
def test_delete_prefix_deletes_only_that_prefix() -> None:
    url = redis_url(LIMITS_DB)
    wait_for_redis(url)
    client = redis.Redis.from_url(url)
    mine, other = f"test:support:{uuid.uuid4().hex}:", f"test:support:{uuid.uuid4().hex}:"
    try:
        client.set(mine + "a", 1)
        client.set(mine + "b", 2)
        client.set(other + "a", 3)
        delete_prefix(url, mine)
        assert client.get(mine + "a") is None and client.get(mine + "b") is None
        assert client.get(other + "a") == b"3"
    finally:
        client.delete(other + "a")
        client.close()


def test_the_suites_redis_databases_are_distinct_and_exist() -> None:
    """One number per suite that must see every key of its database, each one of Redis's 16."""
    numbers = {name: value for name, value in vars(suite_redis).items() if name.endswith("_DB")}
    assert len(numbers) >= 5 and len(set(numbers.values())) == len(numbers), numbers
    assert all(0 <= n < 16 for n in numbers.values()), numbers


def test_this_process_has_a_redis_of_its_own() -> None:
    """Two xdist workers (or two people's runs) never share the suites' fixed database numbers:
    each pytest process points them at a redis-server it started (tests/support/isolation.py)."""
    assert server() != MACHINE_SERVER and port_open(int(server().rsplit(":", 1)[1]))
    another = RedisServer().start()
    try:
        assert another.url != server()
        redis.Redis.from_url(f"{another.url}/0").set("mine", 1)
        assert redis.Redis.from_url(redis_url(0)).get("mine") is None  # not this process's server
        another.stop()
        assert not another.answers()
        another.start()  # the same port again, empty: a restart
        assert redis.Redis.from_url(f"{another.url}/0").get("mine") is None
    finally:
        another.close()
    assert not another.dir.exists()


def test_wait_for_redis_fails_with_the_url_when_nothing_answers() -> None:
    url = f"redis://127.0.0.1:{free_port()}/0"
    with pytest.raises(pytest.fail.Exception, match="not reachable"):
        wait_for_redis(url, timeout_s=0.3, interval_s=0.1)


# --- processes and workers -------------------------------------------------------------------------
def test_process_tree_is_read_from_proc_and_stopped_as_a_group(tmp_path: Path) -> None:
    tag = uuid.uuid4().hex
    log = tmp_path / "tree.log"
    proc = spawn_logged([sys.executable, "-c", TREE], browserq_env({"CHAOS_TAG": tag}), log)
    try:
        wait_for_log(proc, log, lambda text: "ready" in text, 30, "the tree to start")
        (child,) = wait_until(lambda: set(descendants(proc.pid)), 10, "the child")
        assert parent_of(child) == proc.pid and descends_from(child, proc.pid)
        assert not descends_from(proc.pid, child)
        assert b"time.sleep(60)" in cmdline(child) and is_alive(child)
        assert tagged_pids(tag) == {proc.pid, child}  # both inherited the environment
        stop(proc, 5, group=True)
        wait_until(lambda: not alive({proc.pid, child}), 10, "the group to exit")
        assert not is_alive(child)  # gone, or a zombie nobody reaped yet: dead either way
    finally:
        stop(proc, 1, group=True, sig=signal.SIGKILL)


def test_stop_kills_a_process_that_ignores_sigterm(tmp_path: Path) -> None:
    code = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('ready', flush=True); " \
           "time.sleep(60)"
    log = tmp_path / "stubborn.log"
    proc = spawn_logged([sys.executable, "-c", code], browserq_env({}), log)
    wait_for_log(proc, log, lambda text: "ready" in text, 30, "the process to start")
    began = time.monotonic()
    stop(proc, 0.5)
    assert proc.returncode == -signal.SIGKILL and time.monotonic() - began < 30


def test_wait_for_log_fails_at_once_when_the_process_exits(tmp_path: Path) -> None:
    log = tmp_path / "dies.log"
    proc = spawn_logged([sys.executable, "-c", "print('cannot start: no broker')"], browserq_env({}), log)
    with pytest.raises(AssertionError, match=r"(?s)the worker to start: exited with 0:.*no broker"):
        wait_for_log(proc, log, lambda text: "ready." in text, 60, "the worker to start")
    assert read_log(tmp_path / "missing.log") == ""


def test_browserq_env_replaces_this_processes_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BROWSERQ_QUEUE", "mine")
    env = browserq_env({"BROWSERQ_BROKER_URL": "redis://x/0"})
    assert "BROWSERQ_QUEUE" not in env and env["BROWSERQ_BROKER_URL"] == "redis://x/0"
    assert env["PYTHONPATH"] == str(REPO) and env["PATH"]
    done = subprocess.run([sys.executable, "-c", "import tests.support, browserq"], env=env, cwd="/",
                          capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr  # the subprocess imports this checkout from anywhere


# --- http and templates ----------------------------------------------------------------------------
class _Hello(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", "5")
        self.end_headers()
        self.wfile.write(b"hello")

    def log_message(self, *args: object) -> None:
        pass


def test_serve_http_serves_on_localhost_until_the_block_ends() -> None:
    with serve_http(_Hello) as address:
        assert address.startswith("127.0.0.1:")
        with urlopen(f"http://{address}/", timeout=10) as response:
            assert response.read() == b"hello"
    with pytest.raises(OSError):
        urlopen(f"http://{address}/", timeout=2)


def test_written_templates_load(tmp_path: Path) -> None:
    from browserq.templates import load_template_text

    bundled = REPO / "templates"
    directory = write_templates(tmp_path / "t", {"probe": """
        params:
          url: {type: url, required: true}
        steps:
          - {action: navigate, url: "${url}"}
        """}, copy_from=bundled)
    assert {p.name for p in bundled.glob("*.yaml")} | {"probe.yaml"} == {p.name for p in directory.glob("*.yaml")}
    loaded = load_template_text((directory / "probe.yaml").read_text(), source="probe.yaml")
    assert (loaded.name, loaded.version) == ("probe", "1.0.0")
    assert template_file("x", "  steps: []\n").startswith("name: x\nversion: 1.0.0\nsteps: []")


# --- the order tests are dealt in -----------------------------------------------------------------
def test_every_long_test_named_for_ordering_exists() -> None:
    """A renamed or removed long test would silently drop out of the ordering: name it again."""
    for prefix in ordering.LONGEST:
        path, _, name = prefix.partition("::")
        source = (REPO / path).read_text(encoding="utf-8")
        assert f"def {name.partition('[')[0]}(" in source, f"{prefix} is no test: update tests/support/ordering.py"


def test_first_shares_are_what_worksteal_deals() -> None:
    assert ordering.first_shares(10, 4) == [2, 2, 3, 3]
    assert ordering.first_shares(2325, 4) == [581, 581, 581, 582]
    assert ordering.first_shares(3, 1) == [3]


@dataclass(eq=False)
class _Item:
    nodeid: str


class _Node:
    """What xdist's scheduler asks of a worker: its sends are recorded."""

    shutting_down = False

    def __init__(self, name: str) -> None:
        self.gateway = SimpleNamespace(id=name)
        self.sent: list[int] = []

    def send_runtest_some(self, indices: list[int]) -> None:
        self.sent += indices


def test_xdist_deals_each_worker_a_long_test_first_and_the_longest_apart() -> None:
    """Through pytest-xdist's own ``WorkStealingScheduling``: after the reorder each worker's first
    test is a long one, the longest four are on four workers, no test is lost or repeated."""
    from xdist.scheduler.worksteal import WorkStealingScheduling

    longest = {"t/a.py::long1": 300.0, "t/a.py::long2": 70.0, "t/b.py::long3": 60.0, "t/c.py::long4": 50.0,
               "t/c.py::long5": 40.0, "t/d.py::long6[x]": 30.0}
    names = [f"t/z.py::quick{i}" for i in range(97)]
    for offset, name in enumerate(sorted(longest)):  # spread through the collection, the longest last
        names.insert(len(names) - 10 * offset, name)
    items = ordering.longest_first([_Item(name) for name in names], 4, longest)
    assert sorted(item.nodeid for item in items) == sorted(names)

    scheduler = WorkStealingScheduling(SimpleNamespace(getvalue=lambda name: ["4*popen"]))  # type: ignore[arg-type]  # the scheduler reads only the worker count of a config
    nodes = [_Node(f"gw{i}") for i in range(4)]
    for node in nodes:
        scheduler.add_node(node)  # type: ignore[arg-type]  # a stand-in for xdist's WorkerController
        scheduler.add_node_collection(node, [item.nodeid for item in items])  # type: ignore[arg-type]
    scheduler.schedule()

    firsts = [items[node.sent[0]].nodeid for node in nodes]
    assert sorted(firsts) == ["t/a.py::long1", "t/a.py::long2", "t/b.py::long3", "t/c.py::long4"]
    dealt = [index for node in nodes for index in node.sent]
    assert sorted(dealt) == list(range(len(items)))
    long_per_worker = [[items[i].nodeid for i in node.sent if items[i].nodeid in longest] for node in nodes]
    assert sorted(map(len, long_per_worker)) == [1, 1, 2, 2]  # long5 and long6 join the lightest two
    assert next(share for share in long_per_worker if "t/a.py::long1" in share) == ["t/a.py::long1"]


# --- the zygotes -----------------------------------------------------------------------------------
TIMEIT_WAITS = ("import os, sys, time; sys.stdout.write(os.environ['MARK'] + ' in ' + os.getcwd()); "
                "sys.stdout.flush(); time.sleep(60)")


def test_a_worker_forked_from_the_zygote_has_its_environment_session_and_exit_status(tmp_path: Path) -> None:
    log = tmp_path / "worker.log"
    argv = [sys.executable, "-m", "timeit", "-n", "1", "-r", "1", TIMEIT_WAITS]
    proc = spawn_worker(argv, browserq_env({"MARK": "m4rk"}), log)
    assert isinstance(proc, ForkedProcess) and proc.args == argv
    wait_until(lambda: "m4rk in" in read_log(log), 30, "the forked process to print")
    assert read_log(log).startswith(f"m4rk in {REPO}")  # its environment and working directory
    assert os.getsid(proc.pid) == proc.pid and os.getpgid(proc.pid) == proc.pid  # a session of its own
    assert proc.poll() is None
    with pytest.raises(subprocess.TimeoutExpired):
        proc.wait(0.05)
    stop(proc, 10)
    assert proc.returncode == -signal.SIGTERM and proc.poll() == -signal.SIGTERM


def test_a_worker_is_a_real_process_without_the_zygote_or_under_ld_preload(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    argv = [sys.executable, "-m", "platform"]
    under_preload = spawn_worker(argv, browserq_env({"LD_PRELOAD": ""}), tmp_path / "a.log")
    monkeypatch.setenv("TEST_WORKER_ZYGOTE", "0")
    turned_off = spawn_worker(argv, browserq_env(), tmp_path / "b.log")
    for proc in (under_preload, turned_off):
        assert isinstance(proc, subprocess.Popen)
        assert proc.wait(30) == 0


# --- the stores any_runtime runs on --------------------------------------------------------------
def test_test_stores_narrows_any_runtime_and_an_unknown_name_stops_the_run(monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.conftest import _stores_to_run

    monkeypatch.delenv("TEST_STORES", raising=False)
    assert _stores_to_run() == ["postgresql", "sqlite"]
    monkeypatch.setenv("TEST_STORES", "sqlite")
    assert _stores_to_run() == ["sqlite"]
    for bad in ("mysql", ",", "sqlite,oracle"):
        monkeypatch.setenv("TEST_STORES", bad)
        with pytest.raises(pytest.UsageError, match=f"TEST_STORES={bad!r}: name one or more of postgresql, sqlite"):
            _stores_to_run()
