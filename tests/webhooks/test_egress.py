"""The webhook egress policy at send time: a host name that resolves to an internal address is
refused when the POST is made (DNS cannot route around the producer's check), recorded as a
failed attempt that is not tried again, unless the operator allowed that host; and the POST
connects to the address that was checked, without asking DNS a second time."""

from __future__ import annotations

import ipaddress
import socket
from pathlib import Path
from typing import Any

import pytest

from browserq.store import Store
from browserq.tasks.webhooks import deliver
from browserq.webhooks.egress import EgressPolicy
from tests.conftest import make_settings
from tests.support.receiver import webhook_receiver
from tests.webhooks.conftest import completed_event

SECRET = "whsec-egress-0123456789"




def _internal_name() -> tuple[str, str]:
    """This machine's own name, which its resolver maps to an internal address (/etc/hosts:
    127.0.x.1 or the container's private address): a name the producer cannot judge."""
    name = socket.gethostname()
    address = socket.getaddrinfo(name, 80, type=socket.SOCK_STREAM)[0][4][0]
    assert not ipaddress.ip_address(address).is_global, f"{name} resolves to a public address"
    assert EgressPolicy().url_problem(name, 80) is None  # a plain name: accepted at the producer
    return name, address


def test_a_name_that_resolves_to_an_internal_address_is_refused_at_send_time(
    store: Store, tmp_path: Path
) -> None:
    name, address = _internal_name()
    settings = make_settings(tmp_path, webhook_secret=SECRET)
    with webhook_receiver(SECRET) as receiver:
        port = receiver.url.split(":")[2].split("/")[0]
        delivery_id = completed_event(store, f"http://{name}:{port}/hooks/browserq")
        assert (
            deliver(store, settings, delivery_id, 1) is None
        )  # given up at once: retrying cannot help
    assert receiver.got == []  # nothing left the worker
    [attempt] = store.webhooks.webhook_attempts(delivery_id)
    assert attempt["error"].startswith(
        f"refused by the webhook egress policy: {name} resolves to an address webhooks may not reach: {address} is a"
    )
    assert "BROWSERQ_WEBHOOK_ALLOWED" in attempt["error"]
    assert store.webhooks.webhook_deliveries(store.runs.list_runs()[0].id)[0].status == "failed"


def test_an_allowed_host_is_delivered_to_whatever_it_resolves_to(
    store: Store, tmp_path: Path
) -> None:
    name, _address = _internal_name()
    settings = make_settings(tmp_path, webhook_secret=SECRET, webhook_allowed_hosts=name.upper())
    with webhook_receiver(SECRET) as receiver:
        port = receiver.url.split(":")[2].split("/")[0]
        if _address.startswith("127."):
            delivery_id = completed_event(store, f"http://{name}:{port}/hooks/browserq")
        else:  # the receiver listens on 127.0.0.1 only: reach it by a name that maps there
            delivery_id = completed_event(store, f"http://localhost:{port}/hooks/browserq")
            settings = make_settings(
                tmp_path, webhook_secret=SECRET, webhook_allowed_hosts="localhost"
            )
        assert deliver(store, settings, delivery_id, 1) is None
    assert [r.verified for r in receiver.got] == [True]


def test_the_post_connects_to_the_address_that_was_checked(
    store: Store,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A rebinding resolver answers an allowed address first and an internal one after: the
    POST goes to the first answer, and asks only once."""
    real = socket.getaddrinfo
    asked: list[str] = []

    def rebinding(host: str, *args: Any, **kwargs: Any) -> Any:
        if host != "rebind.test":
            return real(host, *args, **kwargs)
        asked.append(host)
        answer = "127.0.0.1" if len(asked) == 1 else "169.254.169.254"
        return real(answer, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", rebinding)
    settings = make_settings(
        tmp_path, webhook_secret=SECRET, webhook_allowed_networks="127.0.0.1/32"
    )
    with webhook_receiver(SECRET) as receiver:
        port = receiver.url.split(":")[2].split("/")[0]
        delivery_id = completed_event(store, f"http://rebind.test:{port}/hooks/browserq?k=1")
        assert deliver(store, settings, delivery_id, 1) is None
    assert asked == ["rebind.test"]
    [got] = receiver.got
    assert got.verified and got.headers["Host"] == f"rebind.test:{port}"
