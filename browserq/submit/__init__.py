"""How a run is accepted: resolved and validated once, recorded, then sent; batches; cancelling.

    producer.py  ``run_template.delay(template, params=…)``: validate once, idempotency, record, send
    batches.py   ``run_batch``: every item validated before anything is sent, a Celery group
    services.py  the registry, store and secret box of a producer process

The validation rules themselves (``prepare_run``, ``check_run_options``, ``record_run``, …) live
in :mod:`browserq.execute.accept`, below the three doors that use them (this producer, the worker
for messages sent without it, in-process runs).
"""

from browserq.submit.batches import BatchHandle, batch_summary, run_batch
from browserq.submit.producer import accept_and_send, admit, cancel_run, idempotency_key_for
from browserq.submit.services import ProducerServices, producer_services, reset_producer_cache

__all__ = [
    "BatchHandle",
    "ProducerServices",
    "accept_and_send",
    "admit",
    "batch_summary",
    "cancel_run",
    "idempotency_key_for",
    "producer_services",
    "reset_producer_cache",
    "run_batch",
]
