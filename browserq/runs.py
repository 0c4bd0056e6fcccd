"""Turning "template + params" into a recorded run: validation first, then the run record.

Shared by the Celery producer (before anything is sent), the worker (for messages sent without
going through the producer) and the in-process CLI, so bad input fails the same way everywhere.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from browserq.errors import ParamError
from browserq.redact import mask
from browserq.secrets import SecretBox
from browserq.store import Store
from browserq.templates import LoadedTemplate, TemplateRegistry, secret_names, validate_params
from browserq.templates.regex import interpolated_pattern_problems


@dataclass(frozen=True)
class PreparedRun:
    """A validated run, not yet recorded: secrets are in clear here and only here."""

    run_id: str
    loaded: LoadedTemplate
    params: dict[str, Any]
    secret_names: frozenset[str]

    @property
    def redacted_params(self) -> dict[str, Any]:
        return {k: (mask(k) if k in self.secret_names else v) for k, v in self.params.items()}

    @property
    def secret_values(self) -> dict[str, Any]:
        return {k: v for k, v in self.params.items() if k in self.secret_names and v is not None}


def prepare_run(
    registry: TemplateRegistry, template_ref: str, params: dict[str, Any] | None, run_id: str | None = None
) -> PreparedRun:
    """Resolve the template and validate the params; raises TemplateError / ParamError."""
    if not isinstance(template_ref, str) or not template_ref.strip():
        from browserq.errors import TemplateNotFound

        raise TemplateNotFound("the template reference must be a non-empty string like 'quotes@1.2'")
    return prepare_loaded(registry.resolve(template_ref.strip()), params, run_id)


def prepare_loaded(
    loaded: LoadedTemplate, params: dict[str, Any] | None, run_id: str | None = None
) -> PreparedRun:
    """Validate params against an already loaded template (embedding, tests, stored bodies)."""
    values = validate_params(loaded.template, params or {}, template_ref=loaded.ref)
    problems = interpolated_pattern_problems(loaded.template, values)
    if problems:  # a pattern built from params is checked now, before anything is enqueued
        raise ParamError(loaded.ref, problems)
    return PreparedRun(
        run_id=run_id or uuid.uuid4().hex,
        loaded=loaded,
        params=values,
        secret_names=frozenset(secret_names(loaded.template)),
    )


def record_run(
    store: Store,
    prepared: PreparedRun,
    *,
    secret_box: SecretBox | None,
    task_id: str | None = None,
    queue: str | None = None,
    idempotency_key: str | None = None,
    batch_id: str | None = None,
    identity: str | None = None,
    identity_pool: str | None = None,
    tenant: str | None = None,
) -> None:
    """Store the exact template body and the run (secret params encrypted, or not kept at all)."""
    loaded = prepared.loaded
    template_id = store.save_template(
        name=loaded.name,
        version=loaded.version,
        content_hash=loaded.content_hash,
        body=loaded.body,
        source=loaded.source,
    )
    secrets_token = None
    if secret_box is not None and prepared.secret_values:
        secrets_token = secret_box.encrypt(
            prepared.secret_values, why=f"template {loaded.ref} takes secret params"
        )
    store.create_run(
        run_id=prepared.run_id,
        template_id=template_id,
        template_name=loaded.name,
        template_version=loaded.version,
        params=prepared.redacted_params,
        timeout_s=loaded.template.settings.timeout_s,
        task_id=task_id,
        queue=queue,
        secrets=secrets_token,
        idempotency_key=idempotency_key,
        batch_id=batch_id,
        identity=identity,
        identity_pool=identity_pool,
        tenant=tenant,
    )
