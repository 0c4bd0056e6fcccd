"""A name@version is immutable once a run used it: the store pins it to its content hash.

The content hash is the sha256 of the template's canonical body (parsed YAML, sorted keys, no
comments), so reformatting or commenting a file is not a change, and any change of meaning is.
"""

from __future__ import annotations

import threading
import uuid

import pytest
from sqlalchemy import func, inspect, select, text

from alembic import command
from browserq.errors import StoreError, TemplateChanged
from browserq.execute.accept import prepare_loaded, record_run
from browserq.store import Store, TemplateRecord
from browserq.store.migrations import alembic_config
from browserq.templates import load_template_text
from browserq.templates.loader import canonical_hash
from tests.store.helpers import count, template

HASH_B = "b" * 64

BODY = """\
name: pinned
version: 1.0.0
params:
  url: {type: url, default: "https://example.com/"}
steps:
  - {action: navigate, url: "${url}"}
  - {action: click, selector: "#go"}
"""
# the same template written differently: comments, key order, flow vs block style
REFORMATTED = """\
# reformatted, same meaning
version: 1.0.0
name: pinned
steps:
  - action: navigate
    url: "${url}"
  - {selector: "#go", action: click}   # still a click
params:
  url:
    default: https://example.com/
    type: url
"""
CHANGED = BODY.replace('"#go"', '"#stop"')


def record(store: Store, body: str) -> str:
    prepared = prepare_loaded(load_template_text(body, source="pinned.yaml"), {})
    record_run(store, prepared, secret_box=None)
    return prepared.run_id


def counts(store: Store) -> tuple[int, int]:
    with store.engine.connect() as conn:
        runs = conn.execute(text("SELECT count(*) FROM runs")).scalar_one()
        templates = conn.execute(select(func.count()).select_from(TemplateRecord)).scalar_one()
    return runs, templates


def test_canonical_hash_ignores_layout_and_sees_meaning() -> None:
    first, again = load_template_text(BODY), load_template_text(REFORMATTED)
    assert first.content_hash != again.content_hash  # the exact text differs
    assert first.canonical_hash == again.canonical_hash == canonical_hash(BODY)
    assert load_template_text(CHANGED).canonical_hash != first.canonical_hash
    quoted = BODY.replace("version: 1.0.0", 'version: "1.0.0"')
    assert load_template_text(quoted).canonical_hash == first.canonical_hash


def test_a_changed_body_under_a_used_version_is_refused(store: Store) -> None:
    first = record(store, BODY)
    run = store.runs.get_run(first)
    assert run is not None and run.template_hash == canonical_hash(BODY)
    assert store.templates.template_pin("pinned", "1.0.0") == canonical_hash(BODY)

    second = record(store, REFORMATTED)  # same meaning: accepted, its exact text kept too
    assert store.runs.get_run(second).template_hash == run.template_hash
    before = counts(store)

    with pytest.raises(TemplateChanged) as info:
        record(store, CHANGED)
    message = str(info.value)
    assert "pinned@1.0.0" in message and "Bump `version:`" in message and "immutable" in message
    assert counts(store) == before  # nothing recorded: no run, no template row
    assert store.templates.template_pin("pinned", "1.0.0") == canonical_hash(BODY)
    # the body the first run used is what its worker executes
    assert store.templates.get_template_body(run.template_id).body == BODY

    bumped = record(store, CHANGED.replace("version: 1.0.0", "version: 1.0.1"))
    assert store.runs.get_run(bumped).template_hash == canonical_hash(CHANGED.replace("1.0.0", "1.0.1"))


def test_two_producers_racing_with_different_bodies_pin_one(store: Store) -> None:
    name = f"race{uuid.uuid4().hex[:6]}"
    bodies = [BODY.replace("name: pinned", f"name: {name}"), CHANGED.replace("name: pinned", f"name: {name}")]
    barrier = threading.Barrier(2)
    outcomes: list[object] = [None, None]

    def submit(i: int) -> None:
        barrier.wait()
        try:
            outcomes[i] = record(store, bodies[i])
        except TemplateChanged as exc:
            outcomes[i] = exc

    threads = [threading.Thread(target=submit, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    refused = [o for o in outcomes if isinstance(o, TemplateChanged)]
    accepted = [o for o in outcomes if isinstance(o, str)]
    assert len(refused) == 1 and len(accepted) == 1, outcomes
    winner = bodies[outcomes.index(accepted[0])]
    assert store.templates.template_pin(name, "1.0.0") == canonical_hash(winner)


def test_migration_0004_backfills_hashes_and_pins(empty_url: str) -> None:
    store = Store(empty_url)

    def migrate(how, revision: str) -> None:
        with store.engine.connect() as conn:
            config = alembic_config()
            config.attributes["connection"] = conn
            how(config, revision)
            conn.commit()

    newer = BODY.replace('"#go"', '"#newer"')
    try:
        migrate(command.upgrade, "0003")
        with store.engine.begin() as conn:
            ids = {}
            for key, version, body in (("a", "1.0.0", BODY), ("b", "1.0.0", newer), ("c", "2.0.0", BODY)):
                conn.execute(
                    text(
                        "INSERT INTO templates (name, version, content_hash, body, source, "
                        "created_at) VALUES ('pinned', :v, :h, :b, 'x.yaml', :now)"
                    ),
                    {"v": version, "h": key * 64, "b": body.replace("1.0.0", version),
                     "now": "2026-11-30 10:00:00+00"},
                )
                ids[key] = conn.execute(
                    text("SELECT id FROM templates WHERE content_hash = :h"), {"h": key * 64}
                ).scalar_one()
            # template c was stored but no run used it (its producer's broker was down)
            for run_id, key in (("r1", "a"), ("r2", "b")):
                conn.execute(
                    text(
                        "INSERT INTO runs (id, template_id, template_name, template_version, params, "
                        "status, attempt, timeout_s, created_at, lease_token, takeovers) VALUES "
                        "(:id, :tid, 'pinned', '1.0.0', '{}', 'completed', 1, 30, :now, 0, 0)"
                    ),
                    {"id": run_id, "tid": ids[key], "now": "2026-11-30 10:00:00+00"},
                )
        migrate(command.upgrade, "head")
        assert store.runs.get_run("r1").template_hash == canonical_hash(BODY)
        assert store.runs.get_run("r2").template_hash == canonical_hash(newer)
        assert store.templates.template_pin("pinned", "1.0.0") == canonical_hash(newer)  # the newest used
        assert store.templates.template_pin("pinned", "2.0.0") is None
        with pytest.raises(TemplateChanged):
            record(store, BODY)
        record(store, newer)
        migrate(command.downgrade, "0003")
        columns = {c["name"] for c in inspect(store.engine).get_columns("runs")}
        assert "template_hash" not in columns
    finally:
        store.dispose()


def test_save_template_is_idempotent(store: Store) -> None:
    first = template(store)
    assert template(store) == first
    other_hash = template(store, content_hash=HASH_B)
    other_version = template(store, version="2")
    assert len({first, other_hash, other_version}) == 3
    assert count(store, "templates") == 3
    record = store.templates.get_template_body(first)
    assert isinstance(record, TemplateRecord)
    assert (record.name, record.version, record.body) == ("login", "1", "name: login\n")
    assert record.created_at.tzinfo is not None


def test_save_template_rejects_a_bad_hash(store: Store) -> None:
    with pytest.raises(ValueError, match="sha256"):
        store.templates.save_template(name="x", version="1", content_hash="nothex", body="", source="s")


def test_unknown_template_id(store: Store) -> None:
    with pytest.raises(StoreError, match="no template"):
        store.templates.get_template_body(12345)


def test_concurrent_save_template_makes_one_row(store: Store) -> None:
    barrier = threading.Barrier(4)
    ids: list[int] = []
    errors: list[BaseException] = []

    def save() -> None:
        barrier.wait()
        try:
            ids.append(template(store, name="race"))
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=save) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert errors == []
    assert len(ids) == 4 and len(set(ids)) == 1
    assert count(store, "templates") == 1
