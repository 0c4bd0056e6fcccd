"""Many runs of one template as one batch: Celery's ``group``, an aggregate record, a breaker.

``run_batch`` validates every item before anything is sent (one bad item → nothing enqueued),
records the batch and its runs, then sends them as a Celery group. Each run that ends updates the
batch; if the failure rate over the first ``min_runs`` finished runs passes
``max_failure_rate``, the breaker trips and the batch's remaining runs are cancelled with that
reason (see :mod:`browserq.execute.breaker`).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from celery import group
from celery.result import GroupResult

from browserq.errors import BrowserqError, ParamError
from browserq.execute import PreparedRun, check_template_pin, record_run
from browserq.execute.admission import admit
from browserq.settings import get_settings
from browserq.store import BatchView
from browserq.store.artifacts import artifact_store
from browserq.submit.producer import run_queue
from browserq.submit.services import producer_services
from browserq.tasks import run_template, time_limits


@dataclass(frozen=True)
class BatchHandle:
    """``result.get(propagate=False)`` lists each run's result dict, or the ``RunFailed`` /
    ``TaskRevokedError`` of a run that failed or was cancelled (``get()`` raises the first)."""

    batch_id: str
    run_ids: list[str]
    result: GroupResult

    def summary(self) -> BatchView:
        return batch_summary(self.batch_id)


def run_batch(
    template: str,
    params_list: Sequence[Mapping[str, Any]],
    *,
    min_runs: int | None = None,
    max_failure_rate: float | None = None,
    queue: str | None = None,
    notify: str | None = None,
) -> BatchHandle:
    """Enqueue one run per params mapping; returns the batch id, run ids and the GroupResult.
    ``notify``: where each run's events are POSTed (as ``run_template.delay(notify=…)``)."""
    if not params_list:
        raise BrowserqError("run_batch needs at least one params mapping")
    if max_failure_rate is not None and not 0 <= max_failure_rate <= 1:
        raise BrowserqError("max_failure_rate is a fraction between 0 and 1, e.g. 0.5")
    services = producer_services()
    registry, store, secret_box = services.registry, services.store, services.secret_box
    settings = get_settings()
    prepared: list[PreparedRun] = []
    problems: list[str] = []
    notify_url: str | None = None
    for index, params in enumerate(params_list):
        try:  # the batch's notify is one: checked once, with its first item
            admission = admit(settings, template, params, registry=registry, notify=notify if index == 0 else None)
        except ParamError as exc:
            problems += [f"item {index}: {problem}" for problem in exc.problems]
        else:
            prepared.append(admission.prepared)
            notify_url = admission.notify_url if index == 0 else notify_url
    if problems:
        raise ParamError(template, problems)
    loaded = prepared[0].loaded
    check_template_pin(store, loaded)  # before the batch row: a refused body records nothing
    breaker = None
    if max_failure_rate is not None:
        breaker = {"min_runs": min_runs or min(10, len(prepared)), "max_failure_rate": max_failure_rate}
    batch_id = uuid.uuid4().hex
    queue = run_queue(prepared[0], queue, settings.queue)
    store.batches.create_batch(
        batch_id=batch_id,
        template_name=loaded.name,
        template_version=loaded.version,
        total=len(prepared),
        breaker=breaker,
    )
    for item in prepared:
        record_run(store, item, secret_box=secret_box, task_id=item.run_id, queue=queue, batch_id=batch_id,
                   enqueued=True, artifacts=artifact_store(settings) if item.files else None, notify_url=notify_url)  # the messages follow at once: no second stamp per run
    limits = time_limits(loaded.template.settings.timeout_s, settings, human_wait_s=loaded.template.human_wait_s)
    signatures = [
        run_template.signature(args=[loaded.ref], kwargs={"run_id": item.run_id}, task_id=item.run_id,
                               queue=queue, **limits)
        for item in prepared
    ]
    result = group(signatures).apply_async()
    return BatchHandle(batch_id=batch_id, run_ids=[p.run_id for p in prepared], result=result)


def batch_summary(batch_id: str) -> BatchView:
    """Counts per status, success rate and breaker state of a batch."""
    return producer_services().store.batches.batch_summary(batch_id)


__all__ = ["BatchHandle", "batch_summary", "run_batch"]
