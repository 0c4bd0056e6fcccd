"""Shared fixtures: the demo site as fixture server, a throwaway PostgreSQL database, runtimes.

Everything here is real: Chromium, PostgreSQL, Redis, RabbitMQ. Only remote things that cannot
exist offline are replaced by small local servers. The plumbing these fixtures stand on (scratch
databases, polling, /proc, worker subprocesses) is in :mod:`tests.support`.
"""

from __future__ import annotations

import logging
import os
import textwrap
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import structlog

from browserq.demo.site import DemoSite
from browserq.execute.runtime import Runtime
from browserq.logs import HANDLER_NAME
from browserq.settings import Settings, load_settings
from browserq.templates import LoadedTemplate, load_template_text
from tests.support import REPO, isolation, ordering
from tests.support.postgres import ADMIN_URL as PG_ADMIN_URL  # noqa: F401 (imported from here)
from tests.support.postgres import create_database, drop_database, scratch_name

# Older spellings other test modules import from here (the plumbing lives in tests/support/).
_create_database, _drop_database = create_database, drop_database

_STRAY_BEFORE = pytest.StashKey[bool]()

#: A fixed Fernet key for tests (never used outside them).
TEST_SECRET_KEY = "fDjCt0XlBxDNrVPs6M3Xv7p2YbNwqS1mJ0rFqkU5bBk="


#: The default store's file, where a test that forgot its own database would make it.
STRAY_STORE = REPO / "browserq.db"


def pytest_configure(config: pytest.Config) -> None:
    """Each pytest process (each xdist worker) gets a Redis and a TMPDIR of its own."""
    isolation.begin(config)
    config.stash[_STRAY_BEFORE] = STRAY_STORE.exists()


def pytest_report_header(config: pytest.Config) -> str:
    return (f"browser engine: {isolation.suite_engine()} (TEST_BROWSER=chromium runs every test on the "
            "full Chromium; tests marked full_chromium always do)")


#: Directories whose every test runs on the full Chromium: what they test is the full browser's.
FULL_CHROMIUM_DIRS = ("tests/stealth/",)


@pytest.hookimpl(trylast=True)  # after -k / -m deselected theirs: the shares are of what runs
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Marks the full-Chromium directories; in an xdist worker, puts the longest tests at the head
    of the workers' first shares (:mod:`tests.support.ordering`)."""
    for item in items:
        if item.nodeid.startswith(FULL_CHROMIUM_DIRS):
            item.add_marker(pytest.mark.full_chromium)
    workers = getattr(config, "workerinput", {}).get("workercount")  # set in xdist workers only
    if workers:
        items[:] = ordering.longest_first(items, workers)


@pytest.fixture(autouse=True)
def _full_chromium(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """A test marked ``full_chromium`` (and every browser it starts) runs on the full Chromium."""
    if request.node.get_closest_marker("full_chromium") is not None:
        monkeypatch.setenv("BROWSERQ_BROWSER", "chromium")


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Fail the run if it left the default store in the repository (a test wrote through the
    default settings instead of its own database)."""
    if STRAY_STORE.exists() and not session.config.stash.get(_STRAY_BEFORE, True):
        session.config.get_terminal_writer().line(f"error: the tests left {STRAY_STORE} behind", red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_unconfigure(config: pytest.Config) -> None:
    isolation.end(config)


@pytest.fixture(autouse=True)
def _logging_as_found() -> Iterator[None]:
    """A test that configures logging (a CLI command in-process, a worker's signals,
    tests/test_logs.py) leaves it as it found it. structlog's filter level and the root handler are
    the whole process's: left behind, they dropped a later test's debug line (tests/live: "viewer
    left", so that test failed after some orders and not others) and wrote to a captured stream
    pytest had closed ("--- Logging error ---")."""
    config, root = structlog.get_config(), logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    structlog.configure(**config)
    for added in [h for h in root.handlers if h.get_name() == HANDLER_NAME and h not in handlers]:
        root.removeHandler(added)
    root.setLevel(level)


@pytest.fixture(scope="session")
def site() -> Iterator[DemoSite]:
    with DemoSite() as demo_site:
        yield demo_site


@pytest.fixture
def demo(site: DemoSite) -> DemoSite:
    """The demo site with counters and submissions reset for this test."""
    site.reset()
    return site


@pytest.fixture(scope="session")
def pg_url() -> Iterator[str]:
    """A fresh PostgreSQL database for this test session."""
    name = scratch_name("browserq_test")
    yield create_database(name)
    drop_database(name)


def make_settings(tmp: Path, **overrides: object) -> Settings:
    values: dict[str, object] = {
        "database_url": f"sqlite:///{tmp / 'browserq.db'}",
        "templates_dir": REPO / "templates",
        "artifacts_dir": tmp / "artifacts",
        "secret_key": TEST_SECRET_KEY,
        "step_retry_delay_s": 0.05,
        # The suite's resume tests expect a checkpoint after every new page (the behaviour they
        # were written for); tests/runner/test_checkpoint_interval.py covers the interval itself.
        "checkpoint_interval_ms": 0,
    }
    values.update(overrides)
    return load_settings(**values)


@pytest.fixture(scope="session")
def pg_runtime(tmp_path_factory: pytest.TempPathFactory, pg_url: str) -> Iterator[Runtime]:
    """One in-process runtime (browser + PostgreSQL store) shared by the runner tests."""
    settings = make_settings(tmp_path_factory.mktemp("pg-runtime"), database_url=pg_url)
    runtime = Runtime(settings).start()
    yield runtime
    runtime.stop()


@pytest.fixture(scope="session")
def sqlite_runtime(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runtime]:
    runtime = Runtime(make_settings(tmp_path_factory.mktemp("sqlite-runtime"))).start()
    yield runtime
    runtime.stop()


#: The stores a test using ``any_runtime`` runs on. ``TEST_STORES=sqlite`` narrows it: the driver
#: matrix (tests/drivers/test_matrix.py) does, because a driver is the browser's side of a run and
#: the main suite already runs every such test on both stores.
STORES = ("postgresql", "sqlite")


def _stores_to_run() -> list[str]:
    chosen = [name for name in os.environ.get("TEST_STORES", ",".join(STORES)).split(",") if name]
    unknown = sorted(set(chosen) - set(STORES))
    if unknown or not chosen:
        raise pytest.UsageError(f"TEST_STORES={os.environ['TEST_STORES']!r}: name one or more of {', '.join(STORES)}")
    return chosen


@pytest.fixture(params=_stores_to_run())
def any_runtime(request: pytest.FixtureRequest) -> Runtime:
    """Runs the test on both stores (or those ``TEST_STORES`` names)."""
    return request.getfixturevalue("pg_runtime" if request.param == "postgresql" else "sqlite_runtime")


def template(body: str, **settings: object) -> LoadedTemplate:
    """A template from inline YAML; ``name``/``version`` default to a unique test name."""
    text = textwrap.dedent(body).strip() + "\n"
    if not text.startswith("name:"):
        text = f"name: t{uuid.uuid4().hex[:8]}\nversion: 1.0.0\n" + text
    return load_template_text(text, source="<test>")


@contextmanager
def producer_env(env: dict[str, str]) -> Iterator[None]:
    """Make this test process a browserq producer with ``env``'s ``BROWSERQ_*`` settings (its
    broker, result backend, database), and put back the previous settings afterwards.

    Celery caches the result backend and pooled broker connections on the app: both are rebuilt
    each way, or a later test would read results from the previous test's backend.
    """
    from browserq import celery_app
    from browserq.settings import get_settings, reset_settings_cache

    def configure() -> None:
        reset_settings_cache()
        celery_app.reset_producer_cache()
        celery_app.app.conf.update(celery_app.celery_config(get_settings()))
        celery_app.app._after_fork()  # forget pooled broker connections to the previous broker
        # Built on first use, from the settings in force then: built here, a restore to the
        # defaults made the default store's ./browserq.db in the working directory (the repo).
        celery_app.app._backend_cache = None
        celery_app.app._local.__dict__.pop("backend", None)

    saved = {k: v for k, v in os.environ.items() if k.startswith("BROWSERQ_")}
    for key in saved:
        del os.environ[key]
    os.environ.update({k: v for k, v in env.items() if k.startswith("BROWSERQ_")})
    configure()
    try:
        yield
    finally:
        for key in [k for k in os.environ if k.startswith("BROWSERQ_")]:
            del os.environ[key]
        os.environ.update(saved)
        configure()
