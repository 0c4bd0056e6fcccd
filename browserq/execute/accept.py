"""What a run must pass to be accepted, and its record: validation first, then the run row.

Three doors lead here: the producer (:mod:`browserq.submit`, before anything is sent), the worker
(:mod:`browserq.tasks`, for messages sent without the producer) and in-process runs
(:meth:`browserq.execute.Runtime.run_local`). The rules live at the lowest of those layers so that
each door validates the same way, and none has to import a layer above it.
"""

from __future__ import annotations

import uuid
import weakref
from dataclasses import dataclass, field
from threading import Lock
from typing import Any

from browserq.errors import ConfigError, ParamError, TemplateChanged, TemplateNotFound
from browserq.execute.input_files import discard_input_files, record_input_files, write_input_files
from browserq.limit_specs import TENANT_NAME
from browserq.redact import mask
from browserq.secrets import SecretBox
from browserq.store import Store
from browserq.store.artifacts import ArtifactStore
from browserq.templates import LoadedTemplate, TemplateRegistry, secret_names, validate_params
from browserq.templates.file_params import (
    DEFAULT_MAX_FILE_PARAM_BYTES,
    FileParam,
    upload_path_param_problems,
)
from browserq.templates.interpolate import param_number_problems
from browserq.templates.params import DEFAULT_MAX_PARAMS_BYTES, show
from browserq.templates.regex import interpolated_pattern_problems
from browserq.webhooks.targets import (
    notify_egress_problem,
    notify_target,
    notify_url_problem,
    shown_url,
)

#: Longest ``idempotency_key`` a caller may give (the store keeps 200; derived keys use 41+).
MAX_IDEMPOTENCY_KEY_LENGTH = 150
#: Longest identity / identity pool name (the store's column width).
MAX_IDENTITY_NAME_LENGTH = 100


@dataclass(frozen=True)
class PreparedRun:
    """A validated run, not yet recorded: secrets are in clear here and only here."""

    run_id: str
    loaded: LoadedTemplate
    params: dict[str, Any]
    secret_names: frozenset[str]
    #: ``file`` params' bytes, by param: stored with the run (``params`` hold their references).
    files: dict[str, FileParam] = field(default_factory=dict)

    @property
    def redacted_params(self) -> dict[str, Any]:
        """Params as stored and shown: a secret's value becomes its mask. An optional secret left
        unset stays ``None``: a mask would tell the worker to look for a value nobody stored."""
        return {k: (mask(k) if k in self.secret_names and v is not None else v) for k, v in self.params.items()}

    @property
    def secret_values(self) -> dict[str, Any]:
        return {k: v for k, v in self.params.items() if k in self.secret_names and v is not None}


def prepare_run(
    registry: TemplateRegistry,
    template_ref: str,
    params: dict[str, Any] | None,
    run_id: str | None = None,
    *,
    max_params_bytes: int = DEFAULT_MAX_PARAMS_BYTES,
    max_file_bytes: int = DEFAULT_MAX_FILE_PARAM_BYTES,
    max_human_wait_s: float | None = None,
) -> PreparedRun:
    """Resolve the template and validate the params; raises TemplateError / ParamError."""
    loaded = registry.resolve(template_reference(template_ref))
    return prepare_loaded(loaded, params, run_id, max_params_bytes=max_params_bytes, max_file_bytes=max_file_bytes,
                          max_human_wait_s=max_human_wait_s)


def template_reference(template: Any) -> str:
    """``template`` as a reference to resolve (``TemplateNotFound`` for anything else)."""
    if not isinstance(template, str) or not template.strip():
        raise TemplateNotFound("the template reference must be a non-empty string like 'quotes@1.2'")
    return template.strip()


def prepare_loaded(
    loaded: LoadedTemplate,
    params: dict[str, Any] | None,
    run_id: str | None = None,
    *,
    max_params_bytes: int = DEFAULT_MAX_PARAMS_BYTES,
    max_file_bytes: int = DEFAULT_MAX_FILE_PARAM_BYTES,
    max_human_wait_s: float | None = None,
) -> PreparedRun:
    """Validate params against an already loaded template (embedding, tests, stored bodies).
    A ``file`` param's bytes move to ``files``; its value becomes their reference.
    ``max_human_wait_s``: refuse a template whose handoffs may wait longer in all."""
    budget = loaded.template.human_wait_s
    if max_human_wait_s is not None and budget > max_human_wait_s:
        raise ParamError(loaded.ref, [
            f"its handoffs may wait for people {budget:g} s in all (every handoff step's timeout_s, plus "
            f"handoff.timeout_s × handoff.max_times), more than BROWSERQ_MAX_HUMAN_WAIT_S={max_human_wait_s:g}: "
            "lower those timeouts or raise the setting"
        ])
    values = validate_params(
        loaded.template, params, template_ref=loaded.ref, max_bytes=max_params_bytes,
        max_file_bytes=max_file_bytes,
    )
    run_id = run_id or uuid.uuid4().hex
    files = {name: value for name, value in values.items() if isinstance(value, FileParam)}
    values.update({name: file.reference(run_id, name) for name, file in files.items()})
    problems = interpolated_pattern_problems(loaded.template, values)
    problems += upload_path_param_problems(loaded.template, values)
    problems += param_number_problems(loaded.template, values)  # click_count: "${clicks}" in range
    if problems:  # a pattern built from params is checked now, before anything is enqueued
        raise ParamError(loaded.ref, problems)
    return PreparedRun(
        run_id=run_id,
        loaded=loaded,
        params=values,
        secret_names=frozenset(secret_names(loaded.template)),
        files=files,
    )


def _name_problem(what: str, value: Any, limit: int) -> str | None:
    """Why ``value`` cannot be a name the store keeps and logs print (None: it can)."""
    if not isinstance(value, str) or not value.strip():
        return f"{what} must be a non-empty string, got {show(value)}"
    if len(value) > limit:
        return f"{what} is {len(value):,} characters long; the limit is {limit}"
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return f"{what} is not valid Unicode text (it holds a lone surrogate)"
    if not value.isprintable():
        return f"{what} {show(value)} holds control characters; use printable text"
    return None


def notify_for(prepared: PreparedRun, explicit: Any, settings: Any) -> str | None:
    """Where the run's events are POSTed: ``explicit`` (``.delay(notify=…)``, checked here), else
    the template's ``settings.notify``, else ``BROWSERQ_NOTIFY_URL``. Refused at the producer when
    the egress policy can never let a POST there out (``ParamError``), or there is a URL but no
    ``BROWSERQ_WEBHOOK_SECRET`` to sign with."""
    if explicit is not None and (problem := notify_url_problem(explicit)):
        raise ParamError(prepared.loaded.ref, [problem])
    url = notify_target(explicit, prepared.loaded.template.settings.notify, settings.notify_url)
    if url and (problem := notify_egress_problem(url, settings)):
        raise ParamError(prepared.loaded.ref, [problem])
    if url and not settings.webhook_secret:
        raise ConfigError(
            f"run of {prepared.loaded.ref} would notify {shown_url(url)} but BROWSERQ_WEBHOOK_SECRET is not "
            "set: webhooks are always signed; set it (e.g. from `browserq keygen`) here and in the workers"
        )
    return url


def check_run_options(
    template_ref: object,
    *,
    idempotency_key: Any = None,
    identity: Any = None,
    identity_pool: Any = None,
    tenant: Any = None,
) -> None:
    """Refuse run options the store cannot keep, before anything is looked up or written.

    Raises ``ParamError`` listing every bad option.
    """
    problems = [
        problem
        for what, value, limit in (
            ("idempotency_key", idempotency_key, MAX_IDEMPOTENCY_KEY_LENGTH),
            ("identity", identity, MAX_IDENTITY_NAME_LENGTH),
            ("identity_pool", identity_pool, MAX_IDENTITY_NAME_LENGTH),
            ("tenant", tenant, 200),
        )
        if value is not None and (problem := _name_problem(what, value, limit))
    ]
    tenant_ok = not any(p.startswith("tenant") for p in problems)
    if isinstance(tenant, str) and tenant_ok and not TENANT_NAME.match(tenant):
        problems.append(
            f"tenant {show(tenant)} must be letters, digits and _ . : @ - "
            "(the names BROWSERQ_TENANT_CAPS can cap)"
        )
    if problems:
        raise ParamError(template_ref if isinstance(template_ref, str) else show(template_ref), problems)


def check_template_pin(store: Store, loaded: LoadedTemplate) -> None:
    """``TemplateChanged`` if runs used ``loaded``'s name@version with another body."""
    pinned = store.templates.template_pin(loaded.name, loaded.version)
    if pinned is not None and pinned != loaded.canonical_hash:
        raise TemplateChanged(loaded.ref, loaded.source, loaded.canonical_hash, pinned)


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
    enqueued: bool = False,
    notify_url: str | None = None,
    artifacts: ArtifactStore | None = None,
) -> None:
    """Store the exact template body and the run (secret params encrypted, or not kept at all).
    ``enqueued``: the caller sends its message at once (see ``store.runs.create_run``). The files of
    ``file`` params go to ``artifacts`` first, then are recorded as the run's input artifacts.

    The first run of a ``name@version`` pins it to the template's content hash; a later body with
    another hash raises ``TemplateChanged`` and nothing is recorded. The options were checked by
    the caller (:func:`check_run_options`, before anything was looked up): validated once.
    """
    loaded = prepared.loaded
    secrets_token = None
    if secret_box is not None and prepared.secret_values:
        secrets_token = secret_box.encrypt(
            prepared.secret_values, why=f"template {loaded.ref} takes secret params"
        )
    written = write_input_files(artifacts, prepared)
    try:
        _create(store, prepared, saved_template_id(store, loaded), secrets_token, task_id=task_id, queue=queue,
                idempotency_key=idempotency_key, batch_id=batch_id, identity=identity,
                identity_pool=identity_pool, tenant=tenant, enqueued=enqueued, notify_url=notify_url)
        if written:
            try:
                record_input_files(store, prepared, written)
            except BaseException:
                store.runs.delete_run(prepared.run_id)
                raise
    except BaseException:
        discard_input_files(artifacts, prepared)
        raise


def _create(store: Store, prepared: PreparedRun, template_id: int, secrets_token: str | None, *,
            task_id: str | None, queue: str | None, idempotency_key: str | None, batch_id: str | None,
            identity: str | None, identity_pool: str | None, tenant: str | None, enqueued: bool,
            notify_url: str | None = None) -> None:
    loaded = prepared.loaded
    store.runs.create_run(
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
        template_hash=loaded.canonical_hash or None,
        enqueued=enqueued,
        human_wait_s=loaded.template.human_wait_s,
        notify_url=notify_url,
    )


#: The template rows each store (one process's) has saved or found: (name, version, content
#: hash, canonical hash) → id.
_saved_templates: weakref.WeakKeyDictionary[Store, dict[tuple[str, str, str, str], int]] = (
    weakref.WeakKeyDictionary()
)
_saved_lock = Lock()


def saved_template_id(store: Store, loaded: LoadedTemplate) -> int:
    """The id of ``loaded``'s template row, saved (and its name@version pinned) on first use.

    Template rows are content-addressed and pins never change, so once a store has saved or
    found this exact body under this name@version (the pin check passed), later runs of it need
    no transaction for it: one per run fewer at submission.
    """
    key = (loaded.name, loaded.version, loaded.content_hash, loaded.canonical_hash or "")
    with _saved_lock:
        known = _saved_templates.get(store, {}).get(key)
    if known is not None:
        return known
    template_id = store.templates.save_template(
        name=loaded.name,
        version=loaded.version,
        content_hash=loaded.content_hash,
        body=loaded.body,
        source=loaded.source,
        canonical_hash=loaded.canonical_hash or None,
    )
    with _saved_lock:
        _saved_templates.setdefault(store, {})[key] = template_id
    return template_id


def check_identity_request(
    store: Store, secret_box: SecretBox, identity: str | None, identity_pool: str | None
) -> None:
    """Fail at the producer, not in a worker: one of the two, a key to encrypt its storage, and a
    pool that has identities. A named identity is created on first use."""
    if identity is None and identity_pool is None:
        return
    if identity is not None and identity_pool is not None:
        raise ConfigError("ask for an identity by name or from a pool, not both")
    if not secret_box.enabled:
        raise ConfigError(
            "identities keep their browser storage encrypted at rest: set BROWSERQ_SECRET_KEY "
            "(generate one with `browserq keygen`)"
        )
    if identity is not None:
        store.identities.upsert_identity(name=identity)
    elif not store.identities.list_identities(pool=identity_pool):
        raise ConfigError(
            f"identity pool {identity_pool!r} has no identities; add some with "
            f"`browserq identities add NAME --pool {identity_pool}`"
        )
