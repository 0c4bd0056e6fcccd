"""A session opened with an identity holds that identity's lease for its whole life: a second
session cannot have it meanwhile (identities are leased to one run at a time), its storage is
kept when it closes, and the next session with it starts from that storage."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from browserq.demo.site import DEMO_PASSWORD
from tests.sessions.session_fixtures import session_fleet
from tests.support.polling import wait_until

pytestmark = pytest.mark.slow

QUICK = {"step_timeout_s": 10, "trace": "off"}


def test_a_session_holds_its_identity_exclusively_and_leaves_its_storage(tmp_path: Path, pg_url: str,
                                                                        demo) -> None:
    from browserq import SessionCapacity, open_session
    from browserq.store import Store

    name = f"agent-{uuid.uuid4().hex[:8]}"
    store = Store(pg_url)
    store.schema.upgrade()  # (a no-op when a worker migrated it already)
    try:
        store.identities.upsert_identity(name=name)
        with session_fleet(tmp_path, pg_url, "redis"):
            with open_session(settings=QUICK, identity=name, secrets={"password": DEMO_PASSWORD}) as s:
                held = store.identities.get_identity(name)
                assert held is not None and held.lease_run_id == s.id  # leased to the session
                s.navigate(url=f"{demo.url}/login")
                s.fill(selector="#username", value="demo")
                s.fill(selector="#password", value="${password}")
                s.click(selector="button[type=submit]")
                with pytest.raises(SessionCapacity) as busy:  # at once, not after the open timeout
                    open_session(settings=QUICK, identity=name)
                assert name in str(busy.value) and "leased to another" in str(busy.value)
                refused = next(r for r in store.runs.list_runs(template="session", limit=5) if r.id != s.id)
                assert refused.status == "cancelled" and refused.error_code == "SESSION_CAPACITY"
                assert s.get(selector="#welcome", what="text") == "Welcome, demo"  # it goes on
            freed = wait_until(lambda: (i := store.identities.get_identity(name)) is not None
                               and i.lease_run_id is None and i, 60, "the identity's lease to be released")
            assert freed.storage_encrypted  # its cookies kept for its next run
            with open_session(settings=QUICK, identity=name) as again:  # no login: the storage has it
                again.navigate(url=f"{demo.url}/account")
                assert again.get(selector="#welcome", what="text") == "Welcome, demo"
    finally:
        store.dispose()
