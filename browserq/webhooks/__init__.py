"""Webhooks: a signed POST to the run's ``notify`` URL on ``waiting_for_human``, ``completed``,
``failed``, ``needs_review`` and ``cancelled``.

:mod:`.targets` checks a notify URL (at the producer, when the template loads, when settings
load); :mod:`.signing` signs a body and verifies one (what a receiver does); the outbox rows
live in :mod:`browserq.store.webhooks`, and the Celery task that POSTs them with retries in
:mod:`browserq.tasks.webhooks`.
"""

from browserq.webhooks.signing import (
    SIGNATURE_HEADER,
    TIMESTAMP_HEADER,
    WebhookSignatureError,
    sign,
    verify,
)
from browserq.webhooks.targets import notify_url_problem

__all__ = ["SIGNATURE_HEADER", "TIMESTAMP_HEADER", "WebhookSignatureError", "notify_url_problem", "sign", "verify"]
