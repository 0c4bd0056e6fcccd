"""What a producer process needs to accept runs: the template registry, the store, the secret box.

Built once per process from the settings (the registry only through
``TemplateRegistry.from_settings``, so the producer checks the limits ``templates validate``
checks), and forgotten by :func:`reset_producer_cache` when the settings change.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from browserq.secrets import SecretBox
from browserq.settings import get_settings
from browserq.store import Store
from browserq.tasks.observers import client_relay
from browserq.tasks.signals import template_registry
from browserq.tasks.sweep import sweep_store
from browserq.templates import TemplateRegistry


@dataclass(frozen=True)
class ProducerServices:
    """The registry, store and secret box of this producer process (see :func:`producer_services`)."""

    registry: TemplateRegistry
    store: Store
    secret_box: SecretBox


@lru_cache(maxsize=1)
def producer_services() -> ProducerServices:
    """This process's producer services, built on first use (migrating the store if enabled)."""
    settings = get_settings()
    store = Store.from_settings(settings, webhook_relay=client_relay(settings))  # a cancel's webhook leaves at once
    if settings.auto_migrate:
        store.schema.upgrade()
    return ProducerServices(TemplateRegistry.from_settings(settings), store, SecretBox(settings.secret_key))


def reset_producer_cache() -> None:
    """Forget the producer's registry and store (after settings change, in tests)."""
    producer_services.cache_clear()
    template_registry.cache_clear()
    sweep_store.cache_clear()


__all__ = ["ProducerServices", "producer_services", "reset_producer_cache"]
