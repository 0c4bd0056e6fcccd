"""A recorded run rebuilt as the RunRequest of one attempt: its stored template and params.

The template is the body stored with the run (never the file as it is now), the params are the
stored ones with secrets decrypted into memory, and the request carries where to resume (the last
checkpoint) and which side effects a dead worker left with an unknown outcome.
"""

from __future__ import annotations

from collections import OrderedDict
from threading import Lock
from typing import Any

import structlog

from browserq.errors import ConfigError, StoreError
from browserq.redact import mask
from browserq.runner import RunOutcome, RunRequest
from browserq.runner.checkpoint import Checkpoint, Resolution, parse_path
from browserq.secrets import SecretBox
from browserq.settings import Settings
from browserq.store import Lease, RunView, Store
from browserq.templates import LoadedTemplate, children, load_template_text, secret_names

log = structlog.get_logger(__name__)

#: Stored template bodies one process keeps parsed (a worker runs few templates, many times).
STORED_TEMPLATES_KEPT = 64


class StoredTemplates:
    """The stored template bodies this process has read and parsed, by template id.

    A stored body never changes (a template row is content-addressed: another body is another
    row), so each is read from the store and parsed once per process, not once per run.
    """

    def __init__(self, store: Store, settings: Settings, *, kept: int = STORED_TEMPLATES_KEPT) -> None:
        self.store, self.settings, self.kept = store, settings, kept
        self._parsed: OrderedDict[int, tuple[LoadedTemplate, frozenset[str]]] = OrderedDict()
        self._lock = Lock()  # runs of one process may start on several threads

    def get(self, template_id: int) -> tuple[LoadedTemplate, frozenset[str]]:
        """The parsed template and its secret param names (read and parsed on first use)."""
        with self._lock:
            found = self._parsed.get(template_id)
            if found is not None:
                self._parsed.move_to_end(template_id)
                return found
        record = self.store.templates.get_template_body(template_id)
        loaded = load_template_text(
            record.body,
            source=f"{record.name}@{record.version} (stored)",
            max_selector_length=self.settings.max_selector_length,
            max_repeat=self.settings.max_repeat,
        )
        found = (loaded, frozenset(secret_names(loaded.template)))
        with self._lock:
            self._parsed[template_id] = found
            while len(self._parsed) > self.kept:
                self._parsed.popitem(last=False)
        return found


def materialize(
    templates: StoredTemplates, run: RunView, secrets: dict[str, Any] | None, secret_box: SecretBox
) -> tuple[LoadedTemplate, dict[str, Any], frozenset[str]]:
    """The run's stored template body and params, secrets decrypted into memory."""
    loaded, names = templates.get(run.template_id)
    params = dict(run.params or {})
    wanted = {n for n in names if params.get(n) == mask(n)}
    if wanted and secrets is None:
        if not run.secrets:
            raise ConfigError(f"secret params {sorted(wanted)} of this run were not stored")
        secrets = secret_box.decrypt(run.secrets, why="this run has secret params")
    params.update(secrets or {})
    missing = {n for n in wanted if params.get(n) == mask(n)}
    if missing:
        raise ConfigError(f"secret params {sorted(missing)} of this run are not available to the worker")
    return loaded, params, names


def build_request(
    store: Store,
    lease: Lease,
    loaded: LoadedTemplate,
    params: dict[str, Any],
    names: frozenset[str],
    *,
    checkpoint_box: SecretBox,
    lease_ttl_s: float,
) -> tuple[RunView, RunRequest]:
    """The run as it is now that this attempt holds its lease, and the request to run it.

    Marks the steps an earlier attempt left ``started`` as ``unknown`` first. The run is the one
    the lease's transaction read (``lease.run``), so its checkpoint is the last one any earlier
    holder stored. A first attempt has no earlier steps: it reads and writes no step records.
    """
    run_id = lease.run_id
    unknown = unknown_side_effects(store, lease, loaded) if lease.attempt > 1 else frozenset()
    run = lease.run if lease.run is not None else store.runs.get_run(run_id)
    if run is None:
        raise StoreError(f"run {run_id!r} vanished from the store while it was leased")
    # A resolved run's record may hold only the person's decision (no checkpoint was taken yet).
    record = run.checkpoint
    checkpoint = (
        Checkpoint.from_record(record, checkpoint_box) if record and set(record) != {"resolution"} else None
    )
    if lease.takeover or checkpoint is not None:
        log.info(
            "resuming run", run_id=run_id, attempt=lease.attempt, takeover=lease.takeover,
            checkpoint=checkpoint.path if checkpoint else None, unknown_side_effects=sorted(unknown),
        )
    request = RunRequest(
        run_id=run_id,
        run_attempt=lease.attempt,
        loaded=loaded,
        params=params,
        secret_names=names,
        token=lease.token,
        lease_ttl_s=lease_ttl_s,
        resume=checkpoint,
        unknown_side_effects=unknown,
        resolution=Resolution.from_record(run.checkpoint),
    )
    return run, request


def unknown_side_effects(store: Store, lease: Lease, loaded: LoadedTemplate) -> frozenset[str]:
    """Side-effect steps an earlier attempt started and never finished (marked ``unknown`` now)."""
    store.steps.mark_interrupted_steps(lease.run_id, before_attempt=lease.attempt)
    latest: dict[str, str] = {}
    for record in store.steps.steps(lease.run_id):  # ordered: the last record of a path wins
        latest[record.step_path] = record.status
    return frozenset(
        path for path, status in latest.items() if status == "unknown" and is_side_effect(loaded, path)
    )


def is_side_effect(loaded: LoadedTemplate, path: str) -> bool:
    """Whether the step at an execution path (``1[3].0``) is declared ``side_effect: true``."""
    try:
        segments = parse_path(path)
    except ValueError:
        return False
    steps: list[Any] = loaded.template.steps
    step: Any = None
    for index, _pass in segments:
        if step is not None:
            inner = children(step)  # a repeat's or a block's steps
            if inner is None:
                return False
            steps = inner
        if index >= len(steps):
            return False
        step = steps[index]
    return bool(getattr(step, "side_effect", False))


def recorded_outcome(store: Store, run_id: str) -> RunOutcome:
    """The outcome the store holds for ``run_id`` (StoreError if the run is gone)."""
    run = store.runs.get_run(run_id)
    if run is None:
        raise StoreError(f"run {run_id!r} vanished from the store")
    return outcome_of(run)


def outcome_of(run: RunView) -> RunOutcome:
    """The outcome recorded for a run (what a delivery of a finished run reports)."""
    return RunOutcome(
        run_id=run.id,
        status=run.status,
        outputs=run.outputs or {},
        error_code=run.error_code,
        error_message=run.error_message,
        error_step_path=run.error_step_path,
        warnings=list(run.warnings or []),
    )


__all__ = [
    "STORED_TEMPLATES_KEPT", "StoredTemplates", "build_request", "is_side_effect", "materialize",
    "outcome_of", "recorded_outcome", "unknown_side_effects",
]
