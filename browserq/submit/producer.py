"""The producer: how ``run_template.delay(template, params=…)`` accepts a run before it is sent.

In the caller's process, once: resolve the template, validate the params and the run options,
join an earlier run with the same idempotency key, check the identity asked for, record the run
(secret params encrypted), and only then send a message carrying the template reference and the
run id. Bad input raises here and nothing is enqueued; a broker that is down raises
``BrokerUnavailable`` and the recorded run is deleted again.

Importing this module installs :func:`accept_and_send` as the run task's admission
(:func:`browserq.tasks.install_admission`); ``browserq.celery_app`` imports it.
"""

from __future__ import annotations

import hashlib
from typing import Any

import structlog
from celery import Task
from kombu.exceptions import OperationalError as KombuOperationalError

from browserq.errors import BrokerUnavailable, ParamError
from browserq.execute import (
    PreparedRun,
    check_identity_request,
    record_run,
)
from browserq.execute.admission import admit as admit_run
from browserq.execute.input_files import discard_input_files
from browserq.settings import Settings, get_settings
from browserq.store import DuplicateRun, mask_url
from browserq.store.artifacts import ArtifactStore, artifact_store
from browserq.submit.services import producer_services
from browserq.tasks import install_admission, time_limits
from browserq.templates import render
from browserq.templates.fields import queue_problem

log = structlog.get_logger(__name__)

SIGNATURE = (
    "run_template(template, params=None, idempotency_key=None, identity=None, identity_pool=None, tenant=None, "
    "notify=None)"
)


def accept_and_send(task: Task, args: list[Any], kwargs: dict[str, Any], options: dict[str, Any]) -> Any:
    """Accept a ``run_template`` call with a template and params (through :func:`browserq.execute.admission.admit`, the one
    door), record it, then send it; returns its
    ``AsyncResult`` (an earlier run's, when the idempotency key was used before)."""
    template = args.pop(0) if args else kwargs.pop("template", None)
    params = args.pop(0) if args else kwargs.pop("params", None)
    run_options = {name: kwargs.pop(name, None) for name in ("identity", "identity_pool", "tenant")}
    idempotency_key = kwargs.pop("idempotency_key", None)
    notify = kwargs.pop("notify", None)
    if args or kwargs:
        unexpected = ", ".join([*map(repr, args), *kwargs])
        raise TypeError(f"{SIGNATURE} got unexpected arguments: {unexpected}")
    services = producer_services()
    registry, store, secret_box = services.registry, services.store, services.secret_box
    settings = get_settings()
    admission = admit_run(settings, template, params, registry=registry, notify=notify,
                      idempotency_key=idempotency_key, **run_options)
    prepared, notify_url = admission.prepared, admission.notify_url
    queue = run_queue(prepared, options.get("queue"), settings.queue)
    key = idempotency_key_for(prepared, idempotency_key)
    if key is not None:
        existing = store.runs.find_run_by_idempotency_key(key)
        if existing is not None:
            return task.AsyncResult(existing.id)  # joins the run already submitted
    check_identity_request(store, secret_box, run_options["identity"], run_options["identity_pool"])
    try:
        record_run(store, prepared, secret_box=secret_box, task_id=prepared.run_id, queue=queue,
                   idempotency_key=key, enqueued=True, artifacts=_artifacts(prepared, settings),
                   notify_url=notify_url, **run_options)
    except DuplicateRun as duplicate:  # another producer won the race for this key
        return task.AsyncResult(duplicate.existing_run_id)
    template = prepared.loaded.template
    for name, value in time_limits(template.settings.timeout_s, settings, human_wait_s=template.human_wait_s).items():
        options.setdefault(name, value)
    options.update(
        task_id=prepared.run_id,
        queue=queue,
        argsrepr=repr([prepared.loaded.ref]),
        kwargsrepr=repr({"params": prepared.redacted_params, "run_id": prepared.run_id}),
    )
    try:
        result = task.apply_async([prepared.loaded.ref], {"run_id": prepared.run_id}, **options)
    except KombuOperationalError as exc:
        store.runs.delete_run(prepared.run_id)
        discard_input_files(_artifacts(prepared, settings), prepared)
        raise BrokerUnavailable(
            f"could not send the run to the broker at {mask_url(settings.broker_url)}: {exc}. "
            "Is the broker running? (set BROWSERQ_BROKER_URL)"
        ) from exc
    log.info("run accepted", run_id=prepared.run_id, template=prepared.loaded.name,
             version=prepared.loaded.template.version, queue=queue)
    return result  # enqueued_at was stamped with the record: the message followed at once


def _artifacts(prepared: PreparedRun, settings: Settings) -> ArtifactStore | None:
    """Where a run's file params go: the artifact store the workers read (only when it has some)."""
    return artifact_store(settings) if prepared.files else None


def run_queue(prepared: PreparedRun, explicit: Any, default: str) -> Any:
    """Where the run goes: the caller's ``queue=``, else the template's ``settings.queue``, else
    ``BROWSERQ_QUEUE``. A queue name given as text is checked (``ParamError``); a kombu ``Queue``
    object is the caller's business."""
    if isinstance(explicit, str) and explicit and (problem := queue_problem(explicit)):
        raise ParamError(prepared.loaded.ref, [problem])
    return explicit or prepared.loaded.template.settings.queue or default


def idempotency_key_for(prepared: PreparedRun, explicit: str | None) -> str | None:
    """The caller's key (already checked by ``check_run_options``), else the template's
    ``settings.idempotency_key`` rendered from the params."""
    if explicit is not None:
        return explicit
    pattern = prepared.loaded.template.settings.idempotency_key
    if not pattern:
        return None
    rendered = render(pattern, prepared.params)
    return f"{prepared.loaded.name}:{hashlib.sha256(str(rendered).encode()).hexdigest()[:40]}"


def cancel_run(run_id: str, reason: str = "cancelled by request") -> str:
    """Cancel a queued or running run; returns the status it has now (``cancelled``, or
    ``running`` until its worker notices within a lease renewal)."""
    view = producer_services().store.cancellation.request_cancel(run_id, reason=reason)
    return view.status


install_admission(accept_and_send)
#: The old name of :func:`accept_and_send` (kept working).
admit = accept_and_send

__all__ = ["accept_and_send", "admit", "cancel_run", "idempotency_key_for", "run_queue"]
