"""The producer refuses hostile input with a BrowserqError before anything is recorded or sent,
and refuses a changed body under a name@version that runs already used (real PostgreSQL + Redis).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
import sqlalchemy as sa

from browserq.errors import BrowserqError, ParamError, TemplateNotFound
from tests.conftest import REPO
from tests.e2e.conftest import REDIS_URL, WorkerEnv
from tests.support.cli_zygote import browserq_command

FUZZ = """\
name: fuzz
version: 1.0.0
params:
  s: {type: string}
  n: {type: int}
  f: {type: float}
  l: {type: list}
  pw: {type: secret}
settings: {trace: off}
steps:
  - {action: click, selector: a}
"""
PINNED = """\
name: pinme
version: 1.0.0
settings: {trace: off}
steps:
  - {action: click, selector: "#go"}
"""


def deep(levels: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(levels):
        value = [value]
    return value


def call(args: list[Any], **kwargs: Any) -> dict[str, Any]:
    return {"args": args, "kwargs": kwargs}


# (what is wrong, apply_async arguments, the error class, a fragment of its message)
HOSTILE: list[tuple[str, dict[str, Any], type[BrowserqError], str]] = [
    ("ref is an int", call([5]), TemplateNotFound, "non-empty string"),
    ("ref is a list", call([["fuzz"]]), TemplateNotFound, "non-empty string"),
    ("ref is 1 MB", call(["f" * 1_000_000]), TemplateNotFound, "the limit is 200"),
    ("ref holds NUL", call(["fuzz\x00"]), TemplateNotFound, "invalid template reference"),
    ("params is a list", call(["fuzz", [1, 2]]), ParamError, "params must be a mapping"),
    ("params is a string", call(["fuzz", "s=1"]), ParamError, "params must be a mapping"),
    ("params is an int", call(["fuzz", 7]), ParamError, "params must be a mapping"),
    ("a name is an int", call(["fuzz", {1: "x"}]), ParamError, "names must be strings"),
    ("int over 4,300 digits", call(["fuzz", {"n": 10**5000}]), ParamError, "100 digits"),
    ("int text over 4,300 digits", call(["fuzz", {"n": "9" * 5000}]), ParamError, "100 digits"),
    ("lone surrogate", call(["fuzz", {"s": "a\ud800"}]), ParamError, "lone surrogate"),
    ("lone surrogate in a secret", call(["fuzz", {"pw": "\ud800"}]), ParamError, "lone surrogate"),
    ("NUL in a string", call(["fuzz", {"s": "a\x00b"}]), ParamError, "NUL"),
    ("NaN in a list", call(["fuzz", {"l": [float("nan")]}]), ParamError, "finite"),
    ("inf", call(["fuzz", {"f": float("inf")}]), ParamError, "finite"),
    ("a set", call(["fuzz", {"l": [{1}]}]), ParamError, "JSON"),
    ("an object", call(["fuzz", {"l": [object()]}]), ParamError, "JSON"),
    ("nested 5,000 deep", call(["fuzz", {"l": deep(5000)}]), ParamError, "nested more than"),
    ("a 10 MB param", call(["fuzz", {"s": "x" * 10_000_000}]), ParamError, "BROWSERQ_MAX_PARAMS_BYTES"),
    ("identity over 100", call(["fuzz", {}], identity="i" * 150), ParamError, "the limit is 100"),
    ("identity an int", call(["fuzz", {}], identity=5), ParamError, "identity must be"),
    ("identity with NUL", call(["fuzz", {}], identity="a\x00"), ParamError, "control characters"),
    ("pool over 100", call(["fuzz", {}], identity_pool="p" * 150), ParamError, "the limit is 100"),
    ("pool a list", call(["fuzz", {}], identity_pool=["p"]), ParamError, "identity_pool must be"),
    ("tenant an int", call(["fuzz", {}], tenant=5), ParamError, "tenant must be"),
    ("tenant over 200", call(["fuzz", {}], tenant="t" * 1000), ParamError, "the limit is 200"),
    ("tenant with a space", call(["fuzz", {}], tenant="a b"), ParamError, "BROWSERQ_TENANT_CAPS"),
    ("tenant a surrogate", call(["fuzz", {}], tenant="\udc80"), ParamError, "lone surrogate"),
    ("idempotency_key an int", call(["fuzz", {}], idempotency_key=5), ParamError, "idempotency_key"),
    ("idempotency_key 1,000", call(["fuzz", {}], idempotency_key="k" * 1000), ParamError, "limit is 150"),
]


def counts(pg_url: str, queue: str) -> tuple[int, int, int]:
    engine = sa.create_engine(pg_url)
    try:
        with engine.connect() as conn:
            runs = conn.execute(sa.text("select count(*) from runs")).scalar_one()
            identities = conn.execute(sa.text("select count(*) from identities")).scalar_one()
    finally:
        engine.dispose()
    return runs, identities, redis.Redis.from_url(REDIS_URL).llen(queue)


@pytest.fixture
def producer(redis_config: WorkerEnv, e2e_templates: Path) -> Iterator[str]:
    """The test process as producer, sending to a queue nobody consumes; yields that queue."""
    from browserq import celery_app

    written = [e2e_templates / "fuzz.yaml", e2e_templates / "pinme.yaml"]
    written[0].write_text(FUZZ)
    written[1].write_text(PINNED)
    queue = f"{redis_config.queue}_parked"
    celery_app.reset_producer_cache()
    celery_app.producer_services()  # migrates the database, as the first .delay() would
    try:
        yield queue
    finally:
        for path in written:
            path.unlink(missing_ok=True)
        redis.Redis.from_url(REDIS_URL).delete(queue)


@pytest.mark.parametrize("case", [c[0] for c in HOSTILE])
def test_hostile_input_is_refused_before_anything_is_recorded(producer: str, pg_url: str, case: str) -> None:
    from browserq import run_template

    _, arguments, error, fragment = next(c for c in HOSTILE if c[0] == case)
    before = counts(pg_url, producer)
    with pytest.raises(BrowserqError) as info:
        run_template.apply_async(**arguments, queue=producer)
    assert type(info.value) is error, repr(info.value)[:300]
    assert fragment in str(info.value), str(info.value)[:300]
    assert len(str(info.value)) < 1500
    assert counts(pg_url, producer) == before  # no run, no identity, no message


def test_a_changed_body_under_a_used_version_is_refused(
    producer: str, pg_url: str, redis_config: WorkerEnv, e2e_templates: Path
) -> None:
    from browserq import cancel_run, run_template
    from browserq.errors import TemplateChanged

    first = run_template.apply_async(args=["pinme"], queue=producer)
    path = e2e_templates / "pinme.yaml"
    path.write_text("# a comment is not a change\n" + PINNED)
    bump_mtime(path)
    same = run_template.apply_async(args=["pinme@1.0.0"], queue=producer)

    path.write_text(PINNED.replace("#go", "#stop"))  # a change of meaning, same version
    bump_mtime(path)
    before = counts(pg_url, producer)
    with pytest.raises(TemplateChanged) as info:
        run_template.delay("pinme")
    assert "pinme@1.0.0" in str(info.value) and "Bump `version:`" in str(info.value)
    assert counts(pg_url, producer) == before

    path.write_text(PINNED.replace("#go", "#stop").replace("1.0.0", "1.0.1"))
    bump_mtime(path)
    bumped = run_template.apply_async(args=["pinme"], queue=producer)

    from browserq.store import Store

    store = Store(pg_url)
    try:
        first_hash = store.runs.get_run(first.id).template_hash
        assert first_hash and store.runs.get_run(same.id).template_hash == first_hash
        assert store.runs.get_run(bumped.id).template_version == "1.0.1"
        assert store.runs.get_run(bumped.id).template_hash not in (None, first_hash)
    finally:
        store.dispose()
    shown = browserq_cli(redis_config, "show", first.id)
    assert f"sha256:{first_hash}" in shown.stdout, shown.stdout + shown.stderr
    for result in (first, same, bumped):
        cancel_run(result.id, "test cleanup")


def bump_mtime(path: Path) -> None:
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 2_000_000_000))


def browserq_cli(config: WorkerEnv, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**config.env, "COLUMNS": "200"}
    return browserq_command(args, env=env, cwd=REPO, timeout=120)
