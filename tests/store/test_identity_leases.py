"""Identity leases (browserq.store.identity_leases): by name and from a pool, exclusion for
rotation, fencing and races, on SQLite and PostgreSQL."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import update

from browserq.store import (
    Identity,
    IdentityBusy,
    IdentityDisabled,
    IdentityLease,
    IdentityLeaseLost,
    IdentityNotFound,
    Store,
)
from browserq.store.models import utcnow

TOKEN = "gAAAAABfake-fernet-token"


def expire(store: Store, name: str, seconds_ago: float = 1.0) -> None:
    """Make the identity's lease look expired (without waiting for it)."""
    with store.engine.begin() as conn:
        conn.execute(
            update(Identity)
            .where(Identity.name == name)
            .values(lease_expires_at=utcnow() - timedelta(seconds=seconds_ago))
        )


def acquire(store: Store, run_id: str, **kw: Any) -> IdentityLease:
    return store.identity_leases.acquire_identity(run_id=run_id, owner=f"w-{run_id}", ttl_s=60, **kw)


def race(n: int, fn: Callable[[int], Any]) -> tuple[list[Any], list[BaseException]]:
    """Run ``fn(i)`` in ``n`` threads released together; return (results, errors)."""
    barrier = threading.Barrier(n)
    results: list[Any] = []
    errors: list[BaseException] = []
    lock = threading.Lock()

    def go(i: int) -> None:
        barrier.wait()
        try:
            value = fn(i)
        except BaseException as e:
            with lock:
                errors.append(e)
        else:
            with lock:
                results.append(value)

    threads = [threading.Thread(target=go, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    return results, errors


def test_acquire_by_name(store: Store) -> None:
    store.identities.upsert_identity(name="ann", pool="p", proxy_id="px", region="eu", locale="fr-FR")
    lease = store.identity_leases.acquire_identity(run_id="r1", owner="w1", ttl_s=30, name="ann")
    ident = store.identities.get_identity("ann")
    assert ident is not None
    assert lease == IdentityLease(
        name="ann",
        token=1,
        expires_at=ident.lease_expires_at,
        fingerprint_seed=ident.fingerprint_seed,
        proxy_id="px",
        region="eu",
        locale="fr-FR",
        timezone=None,
        storage_encrypted=None,
        pool="p",
    )
    assert (ident.lease_run_id, ident.lease_owner, ident.uses) == ("r1", "w1", 1)
    assert ident.last_used_at is not None and ident.leased()
    assert timedelta(seconds=25) < lease.expires_at - ident.last_used_at <= timedelta(seconds=30)

    with pytest.raises(IdentityBusy) as busy:
        acquire(store, "r2", name="ann")
    assert (busy.value.name, busy.value.holder_run_id) == ("ann", "r1")
    assert busy.value.expires_at == lease.expires_at
    assert "'ann' is leased to run r1" in str(busy.value)


def test_same_run_reacquire_keeps_it_and_fences_its_previous_attempt(store: Store) -> None:
    store.identities.upsert_identity(name="ann")
    first = acquire(store, "r1", name="ann")
    again = store.identity_leases.acquire_identity(run_id="r1", owner="w2", ttl_s=60, name="ann")
    assert again.token == first.token + 1
    ident = store.identities.get_identity("ann")
    assert ident is not None and (ident.uses, ident.lease_owner) == (1, "w2")
    with pytest.raises(IdentityLeaseLost):
        store.identity_leases.save_identity_storage("ann", token=first.token, storage_encrypted=TOKEN)
    store.identity_leases.save_identity_storage("ann", token=again.token, storage_encrypted=TOKEN)


def test_an_expired_lease_is_taken(store: Store) -> None:
    store.identities.upsert_identity(name="ann")
    first = acquire(store, "r1", name="ann")
    expire(store, "ann")
    taken = acquire(store, "r2", name="ann")
    assert taken.token == first.token + 1
    ident = store.identities.get_identity("ann")
    assert ident is not None and (ident.lease_run_id, ident.uses) == ("r2", 2)


def test_unknown_and_disabled_identities(store: Store) -> None:
    with pytest.raises(IdentityNotFound, match="no identity named 'ghost'"):
        acquire(store, "r1", name="ghost")
    store.identities.upsert_identity(name="ann")
    store.identities.disable_identity("ann", "banned by the site")
    with pytest.raises(IdentityDisabled, match="banned by the site") as disabled:
        acquire(store, "r1", name="ann")
    assert disabled.value.reason == "banned by the site"
    store.identities.enable_identity("ann")
    assert acquire(store, "r1", name="ann").token == 1
    with pytest.raises(IdentityNotFound):
        store.identities.disable_identity("ghost", "x")


def test_bad_arguments(store: Store) -> None:
    with pytest.raises(ValueError, match="exactly one"):
        acquire(store, "r1")
    with pytest.raises(ValueError, match="exactly one"):
        acquire(store, "r1", name="a", pool="p")
    with pytest.raises(ValueError, match="ttl_s"):
        store.identity_leases.acquire_identity(run_id="r1", owner="w", ttl_s=0, name="a")
    with pytest.raises(ValueError, match="clear JSON"):
        store.identity_leases.save_identity_storage("a", token=1, storage_encrypted='{"cookies": []}')


def test_pool_picks_the_least_recently_used_free_identity(store: Store) -> None:
    for name in ("a", "b", "c"):
        store.identities.upsert_identity(name=name, pool="p")
    store.identities.upsert_identity(name="other", pool="q")
    # Use b, then a (c never): the order is c (never used), b, a.
    store.identity_leases.release_identity("b", token=acquire(store, "r0", name="b").token)
    store.identity_leases.release_identity("a", token=acquire(store, "r0", name="a").token)
    assert [acquire(store, f"r{i}", pool="p").name for i in (1, 2, 3)] == ["c", "b", "a"]
    with pytest.raises(IdentityBusy) as busy:
        acquire(store, "r4", pool="p")
    assert (busy.value.name, busy.value.pool, busy.value.pool_size) == (None, "p", 3)
    assert "pool 'p'" in str(busy.value) and "all 3" in str(busy.value)
    assert busy.value.expires_at is not None

    expire(store, "b")
    assert acquire(store, "r4", pool="p").name == "b"


def test_pool_reacquire_by_the_same_run_keeps_its_identity(store: Store) -> None:
    for name in ("a", "b"):
        store.identities.upsert_identity(name=name, pool="p")
    first = acquire(store, "r1", pool="p")
    again = acquire(store, "r1", pool="p")
    assert again.name == first.name and again.token == first.token + 1
    other = acquire(store, "r2", pool="p")
    assert other.name != first.name


def test_empty_disabled_and_unknown_pools(store: Store) -> None:
    with pytest.raises(IdentityNotFound, match="no identities") as missing:
        acquire(store, "r1", pool="nope")
    assert missing.value.pool == "nope"
    store.identities.upsert_identity(name="a", pool="p")
    store.identities.upsert_identity(name="b", pool="p")
    store.identities.disable_identity("a", "burnt")
    assert acquire(store, "r1", pool="p").name == "b"
    with pytest.raises(IdentityBusy, match=r"1 leased, 1 disabled"):
        acquire(store, "r2", pool="p")
    store.identities.disable_identity("b", "burnt")
    with pytest.raises(IdentityNotFound, match="all 2 are disabled"):
        acquire(store, "r2", pool="p")


def test_renew_and_release(store: Store) -> None:
    store.identities.upsert_identity(name="ann")
    lease = store.identity_leases.acquire_identity(run_id="r1", owner="w1", ttl_s=5, name="ann")
    store.identity_leases.renew_identity("ann", token=lease.token, ttl_s=120)
    ident = store.identities.get_identity("ann")
    assert ident is not None and ident.lease_expires_at is not None
    assert ident.lease_expires_at - utcnow() > timedelta(seconds=100)
    with pytest.raises(IdentityLeaseLost):
        store.identity_leases.renew_identity("ann", token=lease.token + 1, ttl_s=60)

    store.identity_leases.release_identity("ann", token=lease.token + 7)  # not ours: nothing happens
    assert store.identities.get_identity("ann").lease_run_id == "r1"  # type: ignore[union-attr]
    store.identity_leases.release_identity("ann", token=lease.token)
    ident = store.identities.get_identity("ann")
    assert ident is not None and (ident.lease_run_id, ident.lease_expires_at) == (None, None)
    assert not ident.leased()
    with pytest.raises(IdentityLeaseLost, match="released"):
        store.identity_leases.renew_identity("ann", token=lease.token, ttl_s=60)
    store.identity_leases.release_identity("ann", token=lease.token)  # twice: fine
    store.identity_leases.release_identity("ghost", token=1)  # gone: fine
    assert acquire(store, "r2", name="ann").token == lease.token + 1


def test_fenced_writes_after_a_takeover(store: Store) -> None:
    store.identities.upsert_identity(name="ann", proxy_id="px1")
    old = acquire(store, "r1", name="ann")
    store.identity_leases.save_identity_storage("ann", token=old.token, storage_encrypted=TOKEN + "1")
    saved = store.identities.get_identity("ann")
    assert saved is not None and saved.storage_saved_at is not None

    expire(store, "ann")
    new = acquire(store, "r2", name="ann")
    assert new.storage_encrypted == TOKEN + "1"  # the next run gets the saved storage
    with pytest.raises(IdentityLeaseLost, match="leased to run r2") as lost:
        store.identity_leases.save_identity_storage("ann", token=old.token, storage_encrypted=TOKEN + "stale")
    assert (lost.value.token, lost.value.current_token) == (old.token, new.token)
    with pytest.raises(IdentityLeaseLost):
        store.identity_leases.set_identity_proxy("ann", token=old.token, proxy_id="px-stale")
    with pytest.raises(IdentityLeaseLost):
        store.identity_leases.renew_identity("ann", token=old.token, ttl_s=60)

    store.identity_leases.save_identity_storage("ann", token=new.token, storage_encrypted=TOKEN + "2")
    store.identity_leases.set_identity_proxy("ann", token=new.token, proxy_id="px2")
    ident = store.identities.get_identity("ann")
    assert ident is not None
    assert (ident.storage_encrypted, ident.proxy_id) == (TOKEN + "2", "px2")

    store.identities.delete_identity("ann")
    with pytest.raises(IdentityLeaseLost, match="no longer exists"):
        store.identity_leases.save_identity_storage("ann", token=new.token, storage_encrypted=TOKEN)


def test_eight_threads_on_a_pool_of_three(store: Store) -> None:
    for name in ("a", "b", "c"):
        store.identities.upsert_identity(name=name, pool="p")
    leases, errors = race(8, lambda i: acquire(store, f"run{i}", pool="p"))
    assert sorted(lease.name for lease in leases) == ["a", "b", "c"]
    assert len(errors) == 5 and all(isinstance(e, IdentityBusy) for e in errors), errors
    holders = {i.lease_run_id for i in store.identities.list_identities(pool="p")}
    assert len(holders) == 3 and all(i.uses == 1 for i in store.identities.list_identities())


def test_two_threads_on_one_name(store: Store) -> None:
    store.identities.upsert_identity(name="ann")
    leases, errors = race(2, lambda i: acquire(store, f"run{i}", name="ann"))
    assert len(leases) == 1 and leases[0].token == 1
    assert len(errors) == 1 and isinstance(errors[0], IdentityBusy), errors


# --- exclude: rotating away from an identity ------------------------------------------------


def _pool(store: Store, *names: str, pool: str = "p") -> None:
    for name in names:
        store.identities.upsert_identity(name=name, pool=pool)


def test_exclude_skips_the_named_identities(store: Store) -> None:
    _pool(store, "a", "b", "c")
    assert acquire(store, "r0", pool="p", exclude={"a"}).name == "b"  # a would be first
    assert acquire(store, "r1", pool="p", exclude=["c", "nobody"]).name == "a"
    assert acquire(store, "r2", pool="p", exclude=()).name == "c"


def test_exclude_rotates_a_run_off_the_identity_it_holds(store: Store) -> None:
    _pool(store, "a", "b")
    blocked = acquire(store, "r1", pool="p")
    assert blocked.name == "a" and acquire(store, "r1", pool="p").name == "a"  # a retry keeps it
    rotated = acquire(store, "r1", pool="p", exclude={"a"})
    assert rotated.name == "b"
    # The run's lease on the excluded one is the caller's to release.
    held = store.identities.get_identity("a")
    assert held is not None and held.lease_run_id == "r1"


def test_when_every_free_identity_is_excluded_an_excluded_one_is_leased(store: Store) -> None:
    _pool(store, "a", "b", "c")
    acquire(store, "other", name="c")
    lease = acquire(store, "r1", pool="p", exclude={"a", "b"})
    assert lease.name == "a"  # the least recently used of the excluded, rather than none
    again = acquire(store, "r1", pool="p", exclude={"a", "b"})
    assert again.name == "a" and again.token == lease.token + 1  # it kept the one it holds


def test_an_excluded_identity_the_run_holds_is_kept_when_nothing_else_is_free(
    store: Store,
) -> None:
    _pool(store, "only")
    first = acquire(store, "r1", pool="p")
    again = acquire(store, "r1", pool="p", exclude={"only"})
    assert again.name == "only" and again.token == first.token + 1


def test_exclude_does_not_make_a_busy_pool_free(store: Store) -> None:
    _pool(store, "a", "b")
    acquire(store, "x", name="a")
    acquire(store, "y", name="b")
    with pytest.raises(IdentityBusy) as busy:
        acquire(store, "r1", pool="p", exclude={"a"})
    assert (busy.value.pool, busy.value.pool_size, busy.value.leased) == ("p", 2, 2)
    assert 1.0 <= busy.value.retry_in_s <= 60.0  # until the first of the two leases runs out


def test_exclude_is_ignored_by_name_and_refuses_a_bare_string(store: Store) -> None:
    _pool(store, "a", "b")
    assert acquire(store, "r1", name="a", exclude={"a"}).name == "a"
    with pytest.raises(TypeError, match="collection of identity names"):
        acquire(store, "r2", pool="p", exclude="a")


def test_exclude_skips_disabled_and_other_pools_like_any_pick(store: Store) -> None:
    _pool(store, "a", "b", "c")
    _pool(store, "elsewhere", pool="q")
    store.identities.disable_identity("b", "banned")
    assert acquire(store, "r1", pool="p", exclude={"a"}).name == "c"
    assert acquire(store, "r2", pool="p", exclude={"a"}).name == "a"  # never b, nor elsewhere
    with pytest.raises(IdentityBusy):
        acquire(store, "r3", pool="p", exclude={"a"})
