"""``browserq doctor``: can this host run browserq as configured? One line per check.

Each check says ✓ (fine), ⚠ (works, but read this), ✗ (will not work: what to do) or – (not
configured, nothing to check). The exit code is 1 when any check fails, 0 otherwise; ``--json``
prints the same as one JSON object. Every check is bounded by a timeout, so a server that does
not answer is a ✗, never a hang.

The checks, in order: Chromium found; its version against the one the installed Playwright was
built for (a mismatch is a warning); a headless launch with browserq's own launcher and flags;
the database reachable and its schema current; the broker reachable; every Redis in use (the beat
lock's; rate limits, tenant caps and proxies, when configured); every template valid; the secret key present and
valid when a template declares secret params; the artifact store writable; the schedules file,
when set, valid.
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Annotated

import typer
from rich.text import Text

from browserq.cli.doctor_browser import (
    LAUNCH_TIMEOUT_S,
    Check,
    Findings,
    check_chromium,
    check_chromium_version,
    check_launch,
    failed,
    first_line,
    passed,
    playwright_chromium,
)
from browserq.cli.render import console
from browserq.settings import Settings, get_settings

#: How long one check may take (a launch: LAUNCH_TIMEOUT_S, longer).
CHECK_TIMEOUT_S = 20.0
#: Socket timeouts of the broker and Redis checks.
CONNECT_TIMEOUT_S = 3.0

MARKS = {"ok": ("✓", "green"), "warn": ("⚠", "yellow"), "fail": ("✗", "bold red"), "skip": ("–", "dim")}


# --- servers -------------------------------------------------------------------------------------
def check_database(settings: Settings, found: Findings) -> Check:
    from browserq.store import Store, head_revision, mask_url
    from browserq.store.migrations import alembic_config, load_alembic

    load_alembic()
    from alembic.script import ScriptDirectory

    shown = mask_url(settings.database_url)
    missing = _missing_sqlite_file(settings.database_url)
    if missing is not None:  # looking would create it
        return Check("database", "warn", f"{missing} does not exist yet; the first worker or "
                     "`browserq db upgrade` creates it", "if it should exist, fix BROWSERQ_DATABASE_URL")
    try:
        store = Store(settings.database_url, retry_window_s=0)
        try:
            current = store.schema.current_revision()
        finally:
            store.dispose()
    except Exception as exc:
        return failed("database", f"cannot reach {shown}: {first_line(exc)}",
                     "start the database, or fix BROWSERQ_DATABASE_URL")
    head = head_revision()
    if current == head:
        return passed("database", f"{shown}, schema at {head} (current)")
    known = current is None or ScriptDirectory.from_config(alembic_config()).get_revision(current)
    if not known:
        return failed("database", f"{shown} is at schema {current}, which this browserq does not "
                     "know (a newer version migrated it)", "upgrade browserq on this host")
    where = "is empty" if current is None else f"is at schema {current}, not {head}"
    if settings.auto_migrate:
        return Check("database", "warn", f"{shown} {where}; workers upgrade it when they start "
                     "(BROWSERQ_AUTO_MIGRATE)", "or run `browserq db upgrade` now")
    return failed("database", f"{shown} {where}", "run `browserq db upgrade`")


def _missing_sqlite_file(url: str) -> Path | None:
    """The file of a SQLite URL when it does not exist (None: not SQLite, in memory, or there)."""
    from sqlalchemy.engine import make_url

    try:
        parsed = make_url(url)
    except Exception:
        return None
    if not parsed.drivername.startswith("sqlite") or parsed.database in (None, "", ":memory:"):
        return None
    path = Path(parsed.database)
    return None if path.exists() else path


def check_broker(settings: Settings, found: Findings) -> Check:
    from kombu import Connection

    from browserq.redact import redact_url

    shown = redact_url(settings.broker_url)
    options = {"socket_timeout": CONNECT_TIMEOUT_S, "socket_connect_timeout": CONNECT_TIMEOUT_S,
               "read_timeout": CONNECT_TIMEOUT_S, "write_timeout": CONNECT_TIMEOUT_S}
    try:
        with Connection(settings.broker_url, connect_timeout=CONNECT_TIMEOUT_S,
                        transport_options=options) as connection:
            connection.ensure_connection(max_retries=0, timeout=CONNECT_TIMEOUT_S)
    except Exception as exc:
        return failed("broker", f"cannot reach {shown}: {first_line(exc)}",
                     "start the broker, or fix BROWSERQ_BROKER_URL")
    return passed("broker", f"{shown} answers")


def _redis_users(settings: Settings) -> dict[str, list[str]]:
    """Each Redis this configuration uses, with what uses it: the beat lock always (every beat
    needs it, even with no schedules file: the sweeper fires only from the lock's holder)."""
    from browserq.limits import limits_redis_url
    from browserq.proxies import proxy_redis_url
    from browserq.schedules.lock import beat_lock_url

    users: dict[str, list[str]] = {}
    if settings.rate_limits or settings.tenant_caps:
        users.setdefault(limits_redis_url(settings), []).append("limits")
    if settings.proxies or settings.proxies_file:
        users.setdefault(proxy_redis_url(settings), []).append("proxies")
    users.setdefault(beat_lock_url(settings), []).append("beat lock")
    return users


#: The variable that moves each use of Redis.
REDIS_VARIABLES = {"limits": "BROWSERQ_LIMITS_REDIS_URL", "proxies": "BROWSERQ_PROXY_REDIS_URL",
                   "beat lock": "BROWSERQ_LIMITS_REDIS_URL (the beat lock lives there, else in a Redis broker)"}


def check_redis(settings: Settings, found: Findings) -> Check:
    """Every Redis in use answers. Only the beat lock's being down, on a host with no schedules
    file (maybe no beat), is a warning: a beat there would fire nothing, not even the sweeper."""
    import redis

    from browserq.redact import redact_url

    users = _redis_users(settings)
    for url, uses in users.items():
        try:
            redis.Redis.from_url(url, socket_timeout=CONNECT_TIMEOUT_S,
                                 socket_connect_timeout=CONNECT_TIMEOUT_S).ping()
        except Exception as exc:
            detail = f"{' and '.join(uses)}: cannot reach {redact_url(url)}: {first_line(exc)}"
            if "beat lock" in uses:
                detail += "; a beat fires nothing while it is down (no schedule, no sweep)"
            fix = f"start Redis, or fix {REDIS_VARIABLES[uses[0]]}"
            if uses == ["beat lock"] and settings.schedules_file is None:
                return Check("redis", "warn", detail, f"{fix}, if this host runs `browserq beat`")
            return failed("redis", detail, fix)
    return passed("redis", "; ".join(f"{' and '.join(u)}: {redact_url(url)} answers" for url, u in users.items()))


# --- configuration -------------------------------------------------------------------------------
def _problem(error: BaseException) -> str:
    """A broken template's first problem on one line (a TemplateInvalid lists them all)."""
    problems = getattr(error, "problems", None)
    first = problems[0] if problems else first_line(error)
    more = f" (+{len(problems) - 1} more)" if problems and len(problems) > 1 else ""
    return " ".join(str(first).split())[:300] + more


def check_templates(settings: Settings, found: Findings) -> Check:
    from browserq.errors import BrowserqError
    from browserq.templates import TemplateRegistry, secret_names

    directory = settings.templates_dir
    if not directory.is_dir():
        return failed("templates", f"{directory} is not a directory",
                     "set BROWSERQ_TEMPLATES_DIR to the folder of your template YAML files")
    files = sorted(p for p in directory.rglob("*") if p.suffix in {".yaml", ".yml"})
    outcome = TemplateRegistry.from_settings(settings).validate_files(files)
    bad = {path: result for path, result in outcome.items() if isinstance(result, BrowserqError)}
    valid = [result for result in outcome.values() if not isinstance(result, BrowserqError)]
    found.secret_templates = [t.ref for t in valid if secret_names(t.template)]
    if bad:
        problems = "; ".join(f"{path.name}: {_problem(error)}" for path, error in bad.items())
        return failed("templates", f"{len(bad)} of {len(outcome)} in {directory} invalid: {problems}",
                     "`browserq templates validate` lists every problem with its line")
    if not valid:
        return Check("templates", "warn", f"no template in {directory}",
                     "put template YAML files there (see docs/templates.md)")
    return passed("templates", f"{len(valid)} valid in {directory}")


def check_secret_key(settings: Settings, found: Findings) -> Check:
    from browserq.secrets import KEY_HINT, SecretBox

    name = "secret key"
    if settings.secret_key:
        try:
            SecretBox(settings.secret_key)
        except Exception as exc:
            return failed(name, first_line(exc).split(";")[0], KEY_HINT)
        return passed(name, "BROWSERQ_SECRET_KEY is a valid Fernet key")
    if found.secret_templates:
        listed = ", ".join(found.secret_templates[:5]) + (" …" if len(found.secret_templates) > 5 else "")
        verb = "declares" if len(found.secret_templates) == 1 else "declare"
        return failed(name, f"BROWSERQ_SECRET_KEY is not set, but {listed} {verb} secret params", KEY_HINT)
    return Check(name, "skip", "not set; no template declares a secret param (named identities "
                               "need one too)")


def check_artifacts(settings: Settings, found: Findings) -> Check:
    """Write, read back and delete a probe, through the store's own interface (any store)."""
    from browserq.store.artifacts import artifact_store

    try:
        store = artifact_store(settings)
        store.check()
        probe = f"browserq doctor {uuid.uuid4().hex}".encode()
        stored = store.write(".doctor", "probe", probe)
        if store.read_bytes(stored.path) != probe:
            return failed("artifacts", f"{store.location(stored.path)} reads back other bytes than "
                         "were written", "check the store (a caching proxy, a full disk?)")
        where = store.location(stored.path)
        store.delete(stored.path)
    except Exception as exc:
        target = settings.artifacts_url or settings.artifacts_dir
        return failed("artifacts", f"cannot store artifacts in {target}: {first_line(exc)}",
                     "make it writable by this user, or set BROWSERQ_ARTIFACTS_DIR / "
                     "BROWSERQ_ARTIFACTS_URL")
    return passed("artifacts", f"wrote, read back and deleted {where}")


def schedules_problems(settings: Settings, path: Path) -> list[str]:
    """The problems of the schedules file as ``browserq schedules validate`` reports them
    (the hook into :mod:`browserq.schedules`)."""
    from browserq.cli.schedules import check

    return [str(problem) for problem in check(settings, path).problems]


def check_schedules(settings: Settings, found: Findings) -> Check:
    path = settings.schedules_file
    if path is None:
        return Check("schedules", "skip", "BROWSERQ_SCHEDULES_FILE not set")
    problems = schedules_problems(settings, path)
    if problems:
        more = f" (+{len(problems) - 1} more)" if len(problems) > 1 else ""
        return failed("schedules", f"{problems[0]}{more}", "`browserq schedules validate` lists them all")
    return passed("schedules", f"{path} is valid")


CheckFn = Callable[[Settings, Findings], Check]
#: Every check in the order it runs (a later one may use what an earlier one found), its name
#: (what a crash or a timeout of the check is reported under) and its time limit.
CHECKS: list[tuple[str, CheckFn, float]] = [
    ("chromium", check_chromium, CHECK_TIMEOUT_S),
    ("chromium version", check_chromium_version, CHECK_TIMEOUT_S),
    ("browser launch", check_launch, LAUNCH_TIMEOUT_S + 10),
    ("database", check_database, CHECK_TIMEOUT_S),
    ("broker", check_broker, CHECK_TIMEOUT_S),
    ("redis", check_redis, CHECK_TIMEOUT_S),
    ("templates", check_templates, CHECK_TIMEOUT_S),
    ("secret key", check_secret_key, CHECK_TIMEOUT_S),
    ("artifacts", check_artifacts, CHECK_TIMEOUT_S),
    ("schedules", check_schedules, CHECK_TIMEOUT_S),
]


def run_check(name: str, check: CheckFn, settings: Settings, found: Findings, timeout_s: float) -> Check:
    """``check`` in a daemon thread: a crash is a ✗ with its message, a hang a ✗ after ``timeout_s``."""
    result: list[Check] = []

    def target() -> None:
        try:
            result.append(check(settings, found))
        except Exception as exc:
            result.append(failed(name, f"the check itself failed: {type(exc).__name__}: {first_line(exc)}",
                                "report this; the other checks are still valid"))

    thread = threading.Thread(target=target, name=f"doctor-{name}", daemon=True)
    thread.start()
    thread.join(timeout_s)
    if not result:
        return failed(name, f"no answer within {timeout_s:.0f} s", "see why it hangs (a server that "
                     "accepts connections but never answers?)")
    return result[0]


def diagnose(settings: Settings) -> list[Check]:
    """Every check, in order."""
    found = Findings()
    return [run_check(name, check, settings, found, timeout) for name, check, timeout in CHECKS]


def _line(check: Check) -> Text:
    mark, style = MARKS[check.status]
    line = Text.assemble((f"{mark} ", style), (f"{check.name:<17}", "bold"), check.detail)
    if check.fix and check.status in ("fail", "warn"):
        line.append(f" → {check.fix}", style="yellow" if check.status == "warn" else "red")
    return line


def doctor(
    json_output: Annotated[bool, typer.Option("--json", help="Print the checks as one JSON object.")] = False,
) -> None:
    """Check that this host can run browserq as configured; exits 1 if any check fails."""
    checks = diagnose(get_settings())
    failed = any(check.status == "fail" for check in checks)
    if json_output:
        print(json.dumps({"ok": not failed, "checks": [asdict(c) for c in checks]}, indent=2))
    else:
        for check in checks:
            console.print(_line(check), soft_wrap=True, highlight=False)
    raise typer.Exit(1 if failed else 0)


__all__ = ["CHECKS", "Check", "diagnose", "doctor", "playwright_chromium", "run_check", "schedules_problems"]
