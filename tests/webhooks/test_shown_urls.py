"""``browserq runs --json`` and ``show --json`` print a run's notify URL by scheme and host (and
port) only, as the README promises: a webhook URL's path or query can itself be a secret."""

from __future__ import annotations

import json
from pathlib import Path

from browserq.store import Store
from tests.cli.helpers import browserq
from tests.store.helpers import new_run

SECRET_URL = "https://bot:pass-456@hooks.example.com:8443/services/T0/B0/secretpart?token=tok-123"


def test_the_json_listings_show_a_notify_url_by_host_only(tmp_path: Path) -> None:
    store = Store(f"sqlite:///{tmp_path / 'cli.db'}")
    store.schema.upgrade()
    try:
        run_id = new_run(store, notify_url=SECRET_URL)
        lease = store.leases.acquire_lease(run_id, owner="w1", ttl_s=30)
        store.transitions.finish_run(run_id, status="completed", outputs={}, token=lease.token)  # an event, too
    finally:
        store.dispose()
    listed = browserq(tmp_path, "runs", "--json")
    shown = browserq(tmp_path, "show", run_id, "--json")
    assert listed.returncode == 0 and shown.returncode == 0, listed.stderr + shown.stderr
    for out in (listed.stdout, shown.stdout):
        assert "secretpart" not in out and "tok-123" not in out and "/services" not in out
        assert "pass-456" not in out and "bot:" not in out  # nor the URL's user:password
    [run] = json.loads(listed.stdout)
    data = json.loads(shown.stdout)
    assert run["notify_url"] == data["run"]["notify_url"] == "https://hooks.example.com:8443/…"
    assert [hook["url"] for hook in data["webhooks"]] == ["https://hooks.example.com:8443/…"]
