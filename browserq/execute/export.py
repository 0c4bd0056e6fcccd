"""``browserq export RUN``: one zip with everything recorded about a run, to archive before a prune.

``run.json`` (the run without its encrypted ``secrets`` column), ``steps.json``,
``transitions.json``, ``handoffs.json``, ``webhooks.json`` (each delivery with its attempts) and
``artifacts/<path>`` for each artifact (read through the artifact store: files or S3). Records
are already redacted when they are written; notify URLs are shown as scheme and host only (their
path may itself be a secret).
"""

from __future__ import annotations

import dataclasses
import json
import zipfile
from datetime import datetime
from pathlib import Path
from typing import Any

from browserq.errors import ConfigError
from browserq.store import Store
from browserq.store.artifacts import ArtifactStore
from browserq.webhooks.targets import shown_url

#: Columns never exported: the Fernet token of the run's secret params.
WITHHELD = frozenset({"secrets"})


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {k: _plain(v) for k, v in dataclasses.asdict(value).items() if k not in WITHHELD}
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def export_run(store: Store, artifacts: ArtifactStore, run_id: str, target: Path) -> int:
    """Write the run's zip to ``target``; returns how many artifact files it holds."""
    run = store.runs.get_run(run_id)
    if run is None:
        raise ConfigError(f"no run {run_id!r} to export")
    record = _plain(run)
    if record.get("notify_url"):
        record["notify_url"] = shown_url(record["notify_url"])
    deliveries = []
    for delivery in store.webhooks.webhook_deliveries(run_id):
        item = _plain(delivery)
        item["url"] = shown_url(item["url"])
        item["attempts_made"] = _plain(store.webhooks.webhook_attempts(delivery.id))
        deliveries.append(item)
    files = store.steps.artifacts(run_id)
    tmp = target.with_name(f".{target.name}.tmp")
    with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        documents = {
            "run.json": record,
            "steps.json": _plain(store.steps.steps(run_id)),
            "transitions.json": _plain(store.transitions.transitions(run_id)),
            "handoffs.json": _plain(store.handoffs.handoffs(run_id)),
            "webhooks.json": deliveries,
            "artifacts.json": _plain(files),
        }
        for name, doc in documents.items():
            archive.writestr(name, json.dumps(doc, indent=2, sort_keys=True, default=str))
        for artifact in files:
            archive.writestr(
                f"artifacts/{artifact.path}",
                artifacts.read_bytes(artifact.path, sha256=artifact.sha256),
            )
    tmp.replace(target)
    return len(files)


__all__ = ["WITHHELD", "export_run"]
