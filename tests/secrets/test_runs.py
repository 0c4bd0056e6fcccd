"""An in-process run on PostgreSQL and SQLite: no row and no artifact holds any form of the secret.

The quick sibling of ``test_everywhere`` (which adds Celery, Redis, the CLI and ``pg_dump``): the
same template — ``?token=`` URL, form fill and post, Basic auth URL, an echo page, a failing
step — with ``human_input`` off and on.
"""

from __future__ import annotations

import json

import pytest
import sqlalchemy as sa

from browserq.execute.runtime import Runtime
from tests.conftest import template
from tests.secrets.forms import expand, find_leaks, keystrokes, secret_forms
from tests.secrets.site import BASIC_USER, SECRET, TEMPLATE, params


@pytest.mark.parametrize("human", [False, True], ids=["human_input off", "human_input on"])
def test_records_and_artifacts_of_a_run_hold_no_form_of_its_secret(
    any_runtime: Runtime, secret_site: str, human: bool
) -> None:
    name = "secret_human" if human else "secret_plain"
    loaded = template(TEMPLATE.format(name=name, human=str(human).lower(), user=BASIC_USER))
    outcome = any_runtime.run_loaded(loaded, params(secret_site))
    assert (outcome.status, outcome.error_code) == ("failed", "ASSERTION_FAILED"), outcome
    assert outcome.outputs["echoed"] == "[secret:password]"  # the page did echo it back
    run = any_runtime.store.runs.get_run(outcome.run_id)
    assert run is not None and "[secret:password]" in run.checkpoint["url"]  # ?v=${password}
    blobs = [("outcome", json.dumps(outcome.as_result(), ensure_ascii=False).encode())]
    with any_runtime.store.engine.connect() as conn:
        for table in sa.inspect(conn).get_table_names():
            rows = conn.execute(sa.text(f'select * from "{table}"')).fetchall()
            blobs.append((f"table {table}", repr(rows).encode() + json.dumps([list(map(str, r)) for r in rows],
                                                                             ensure_ascii=False).encode()))
    artifacts = []
    for artifact in any_runtime.store.steps.artifacts(outcome.run_id):
        path = any_runtime.settings.artifacts_dir / artifact.path
        artifacts += list(expand(str(path), path.read_bytes()))
    assert {a.kind for a in any_runtime.store.steps.artifacts(outcome.run_id)} >= {"dom", "console", "network", "trace"}
    blobs += artifacts
    assert find_leaks(blobs, secret_forms(SECRET, basic_user=BASIC_USER)) == []
    for where, data in artifacts:
        if where.endswith(".trace"):
            assert SECRET[:4] not in keystrokes(data), where
