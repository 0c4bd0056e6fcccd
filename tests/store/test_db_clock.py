"""A worker whose clock is off writes handoff, live-token, cancellation and webhook times on the
database's clock: its links expire neither early nor late for everyone else.

The skewed "worker" is a real process under libfaketime (its wall clock 10 minutes behind or
ahead) that opens the PostgreSQL store and does what a waiting run's worker does: begin a
handoff, mint a one-time link, take a cancel request, queue a webhook. This process, on the true
clock, then checks those times against the database's clock and opens the link.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import select

from browserq.store import Store
from browserq.store.human_models import LiveToken, WebhookDelivery
from tests.support.skewed import LIBFAKETIME

pytestmark = pytest.mark.skipif(not Path(LIBFAKETIME).exists(), reason="libfaketime is not installed")

REPO = Path(__file__).resolve().parents[2]
TTL_S, WAIT_S = 60.0, 300.0
#: What the skewed process does (its own clock is FAKETIME off): one waiting run, its link.
WORKER = f"""
import json, sys
from browserq.store import Store
from tests.store.helpers import new_run
from browserq.store.relay import WebhookRelay
store = Store(sys.argv[1], webhook_relay=WebhookRelay(fleet_notify_url="https://hooks.example.com/h"))
run_id = new_run(store)
lease = store.leases.acquire_lease(run_id, owner="skewed", ttl_s=30)
handoff = store.handoffs.begin_handoff(run_id, token=lease.token, run_attempt=1, step_path="0", kind="step",
                              message="m", until=None, timeout_s={WAIT_S}, live_base_url="http://127.0.0.5:9")
link = store.handoffs.mint_live_token(run_id, purpose="test", ttl_s={TTL_S})
store.cancellation.request_cancel(run_id, reason="skew test")
store.dispose()
print(json.dumps({{"run_id": run_id, "handoff_id": handoff.id, "token": link.split("token=")[1]}}))
"""


def as_skewed_worker(pg_url: str, skew: str) -> dict:
    env = {**os.environ, "PYTHONPATH": str(REPO), "LD_PRELOAD": LIBFAKETIME, "FAKETIME": skew,
           "FAKETIME_DONT_FAKE_MONOTONIC": "1"}
    done = subprocess.run([sys.executable, "-c", WORKER, pg_url], env=env, capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("skew", ["-10m", "+10m"], ids=["behind", "ahead"])
def test_a_skewed_worker_writes_wait_times_on_the_database_clock(pg_url: str, skew: str) -> None:
    store = Store(pg_url)
    store.schema.upgrade()
    try:
        made = as_skewed_worker(pg_url, skew)
        now = store.leases.database_now()
        [handoff] = store.handoffs.handoffs(made["run_id"])
        run = store.runs.get_run(made["run_id"])
        with store.engine.connect() as c:
            token = c.execute(select(LiveToken.expires_at).where(LiveToken.run_id == made["run_id"])).scalar_one()
            outbox = c.execute(select(WebhookDelivery.next_attempt_at)
                               .where(WebhookDelivery.run_id == made["run_id"])).scalar_one()
        left = {"token": token - now, "handoff": handoff.deadline_at - now}
        ago = {"handoff started": now - handoff.started_at, "cancel requested": now - run.cancel_requested_at,
               "webhook due": now - outbox}
        print(f"skew {skew}: left", {k: round(v.total_seconds()) for k, v in left.items()},
              "ago", {k: round(v.total_seconds()) for k, v in ago.items()})
        assert timedelta(0) < left["token"] <= timedelta(seconds=TTL_S), left
        assert timedelta(seconds=WAIT_S - 60) < left["handoff"] <= timedelta(seconds=WAIT_S), left
        for what, since in ago.items():
            assert timedelta(seconds=-1) < since < timedelta(seconds=60), (what, since)
        # the person on the true clock opens the link: it works (behind: no early expiry) once
        assert store.handoffs.redeem_live_token(made["token"], handoff_id=made["handoff_id"]) is True
    finally:
        store.dispose()
