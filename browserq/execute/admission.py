"""The one door a run comes in by: every entry point admits its runs here, under every limit of
the settings it is given.

``.delay()`` / ``apply_async`` and ``run_batch`` (the producer, :mod:`browserq.submit`; ``browserq
enqueue`` and beat's schedules fire through it), a message sent without the producer (``send_task``,
another language: the worker, :mod:`browserq.tasks.run_task`), in-process runs (``browserq run``,
:meth:`browserq.execute.Runtime.run_local` and ``run_loaded``) and the check of a schedules file
all call :func:`admit`; none picks limits of its own. (Each once passed its own subset and they
drifted: the worker dropped ``BROWSERQ_MAX_PARAMS_BYTES``, ``run_loaded`` dropped
``BROWSERQ_MAX_HUMAN_WAIT_S``, the schedule check passed one limit of three.)

What a door does after admission — look up an idempotency key, record the run, send its message —
is the door's own business; what a run must pass is decided only here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from browserq.execute.accept import (
    PreparedRun,
    check_run_options,
    notify_for,
    prepare_loaded,
    template_reference,
)
from browserq.settings import Settings
from browserq.templates import LoadedTemplate, TemplateRegistry


@dataclass(frozen=True)
class Admission:
    """A run that passed the door: validated params (secrets in clear) and where it notifies."""

    prepared: PreparedRun
    notify_url: str | None


def admit(
    settings: Settings,
    template: str | LoadedTemplate,
    params: Any,
    *,
    registry: TemplateRegistry | None = None,
    run_id: str | None = None,
    notify: Any = None,
    idempotency_key: Any = None,
    identity: Any = None,
    identity_pool: Any = None,
    tenant: Any = None,
) -> Admission:
    """Resolve ``template`` (a reference, looked up in ``registry``, or a loaded template), check
    ``params`` and the run's options against every limit of ``settings``, and find where it notifies.

    Raises ``TemplateError`` / ``ParamError`` / ``ConfigError``; nothing is recorded or sent.
    """
    if not isinstance(template, LoadedTemplate):
        if registry is None:
            raise TypeError("admit() of a template reference needs the registry to resolve it in")
        template = registry.resolve(template_reference(template))
    prepared = prepare_loaded(
        template, params, run_id, max_params_bytes=settings.max_params_bytes,
        max_file_bytes=settings.max_file_param_bytes, max_human_wait_s=settings.max_human_wait_s,
    )
    check_run_options(
        prepared.loaded.ref, idempotency_key=idempotency_key, identity=identity, identity_pool=identity_pool,
        tenant=tenant,
    )
    return Admission(prepared, notify_for(prepared, notify, settings))


__all__ = ["Admission", "admit"]
