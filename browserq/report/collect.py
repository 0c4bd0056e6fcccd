"""Gather one run into a :class:`~browserq.report.model.Report`: its record, transitions, step
attempts and artifacts from the store; the artifacts' content from the artifact store.

Params are shown as the store holds them (secret ones already masked there); the run's encrypted
secrets are never read.
"""

from __future__ import annotations

import json
from collections import defaultdict
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from browserq.report import evidence
from browserq.report.model import (
    ArtifactLine,
    Fact,
    HandoffLine,
    Image,
    JsonBlock,
    Report,
    Snapshot,
    Trace,
    WebhookLine,
)
from browserq.report.outputs import previews
from browserq.report.session import is_session, session_timeline
from browserq.report.timeline import build_timeline, duration_text, span, step_lines
from browserq.store.artifacts import artifact_store

if TYPE_CHECKING:
    from browserq.store import Store

#: A transition's reason in the history line is cut to this (the error is shown whole above it).
MAX_REASON_CHARS = 90

#: Files a run moved rather than made (downloads, a producer's file params): listed, never inlined.
NOT_INLINED = frozenset({"download", "input"})
#: The largest JSON artifact the page inlines (browserq's own are bounded far below this).
MAX_INLINED_JSON = 1024 * 1024


class RunNotFound(ValueError):
    """No run has this id (a ValueError: the CLI prints it as one line; it resolves prefixes first)."""

    def __init__(self, run_id: str) -> None:
        super().__init__(f"no run {run_id!r}; list recent ones with `browserq runs`")


def when(value: datetime | None) -> str:
    """A timestamp as people read it, in UTC to the millisecond."""
    return value.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + " UTC" if value else "-"


def build_report(store: Store, settings: Any, run_id: str, *, now: datetime | None = None) -> Report:
    """Everything the report page shows about run ``run_id``."""
    run = store.runs.get_run(run_id)
    if run is None:
        raise RunNotFound(run_id)
    now = now or datetime.now(UTC)
    steps = store.steps.steps(run_id)
    origin, _end = span(run, steps, now)
    files = artifact_store(settings)
    path_of = {s.id: s.step_path for s in steps}
    screenshots, snapshots, traces, extras, lines = _artifacts(files, store.steps.artifacts(run_id), path_of, origin)
    history = store.transitions.transitions(run_id)
    error = f"{run.error_code} at step {run.error_step_path}: {run.error_message or ''}" if run.error_code else ""
    return Report(
        run_id=run.id,
        title=f"{run.template_name}@{run.template_version}",
        status=run.status,
        error=error,
        stats=stats(run, steps, len(run.outputs or {})),
        facts=facts(run),
        warnings=tuple(_warning(w) for w in run.warnings or []),
        history=tuple(_transition(t) for t in history),
        timeline=build_timeline(run, steps, now),
        steps=step_lines(steps, origin),
        screenshots=screenshots,
        snapshots=snapshots,
        traces=traces,
        outputs=previews(run.outputs),
        artifacts=lines,
        extras=extras,
        generated_at=when(now),
        handoffs=handoff_lines(store, run_id, now),
        webhooks=webhook_lines(store, run_id),
        session=session_timeline(run, steps, history) if is_session(run) else None,
    )


def handoff_lines(store: Store, run_id: str, now: datetime) -> tuple[HandoffLine, ...]:
    """The run's waits for people (a view-only watch is not one)."""
    return tuple(
        HandoffLine(h.step_path, h.kind, h.message, h.until or "Continue", when(h.started_at),
                    duration_text(((h.ended_at or now) - h.started_at).total_seconds() * 1000),
                    h.outcome or "waiting", h.inputs)
        for h in store.handoffs.handoffs(run_id) if h.kind != "watch"
    )


def webhook_lines(store: Store, run_id: str) -> tuple[WebhookLine, ...]:
    from browserq.webhooks.targets import shown_url

    return tuple(WebhookLine(d.event, shown_url(d.url), d.status, d.attempts, d.last_error or "")
                 for d in store.webhooks.webhook_deliveries(run_id))


def stats(run: Any, steps: list[Any], outputs: int) -> tuple[Fact, ...]:
    """The few numbers a reader looks for first: how long, how many steps, how many retries."""
    took = (run.finished_at - run.started_at).total_seconds() * 1000 if run.finished_at and run.started_at else None
    retries = len(steps) - len({(s.run_attempt, s.step_path) for s in steps})
    failed = sum(s.status == "failed" for s in steps)
    return (
        Fact("duration", duration_text(took) if took is not None else "-"),
        Fact("steps", str(len({s.step_path for s in steps}))),
        Fact("step attempts", f"{len(steps)}" + (f" · {retries} retr{'ies' if retries != 1 else 'y'}" if retries else "")),
        Fact("failed attempts", str(failed)),
        Fact("run attempts", str(run.attempt) + (f" · {run.takeovers} taken over" if run.takeovers else "")),
        Fact("outputs", str(outputs)),
    )


def facts(run: Any) -> tuple[Fact, ...]:
    """The run header: what ran, where, when, how long — params as stored (masked)."""
    found = [
        Fact("template", f"{run.template_name}@{run.template_version}", mono=True),
        Fact("content hash", f"sha256:{run.template_hash}" if run.template_hash else "- (recorded before 0004)",
             mono=True),
        Fact("worker", run.worker or "-", mono=True),
        Fact("queued", when(run.queued_at or run.created_at)),
        Fact("started", when(run.started_at)),
        Fact("finished", when(run.finished_at)),
    ]
    for label, value in (("queue", run.queue), ("tenant", run.tenant), ("identity", run.identity),
                         ("identity pool", run.identity_pool), ("batch", run.batch_id),
                         ("why", None if run.error_code or run.status == "completed" else run.status_reason)):
        if value:
            found.append(Fact(label, str(value), mono=label != "why"))
    found.append(Fact("params", json.dumps(run.params, ensure_ascii=False, indent=1, default=str), mono=True))
    return tuple(found)


def _warning(warning: dict[str, Any]) -> str:
    where = f"step {warning['step']}: " if warning.get("step") is not None else ""
    return f"{where}{warning.get('code')}: {warning.get('message')}"


def _transition(t: Any) -> str:
    reason = f" — {t.reason}" if t.reason and t.to_status != "queued" else ""
    if len(reason) > MAX_REASON_CHARS:  # a failure's reason is its whole error, shown above
        reason = reason[: MAX_REASON_CHARS - 1] + "…"
    return f"{t.at.astimezone(UTC).strftime('%H:%M:%S')}  {t.to_status}{reason}"


def _artifacts(
    files: Any, artifacts: list[Any], path_of: dict[int, str], origin: datetime | None
) -> tuple[tuple[Image, ...], tuple[Snapshot, ...], tuple[Trace, ...], tuple[JsonBlock, ...],
           tuple[ArtifactLine, ...]]:
    """Sort the run's artifacts into what the page shows of each kind."""
    screenshots, traces, extras = [], [], []
    evidence_of: dict[int | None, list[Any]] = defaultdict(list)
    for a in artifacts:
        where = path_of.get(a.step_attempt_id, "") if a.step_attempt_id else ""
        if a.kind == "screenshot":
            name = a.path.rpartition("/")[2]
            screenshots.append(evidence.image(files, a, f"step {where} · {name}" if where else name))
        elif a.kind == "trace":
            traces.append(evidence.trace(files, a, where))
        elif a.kind in evidence.SNAPSHOT_KINDS:
            evidence_of[a.step_attempt_id].append(a)
        elif a.content_type == "application/json" and a.kind not in NOT_INLINED and a.size <= MAX_INLINED_JSON:
            extras.append(a)  # browserq's own JSON evidence; a downloaded or input file is only listed
    snapshots = tuple(evidence.snapshot(files, path_of.get(step or -1, ""),
                                        parts + [e for e in extras if e.step_attempt_id == step], origin)
                      for step, parts in evidence_of.items())
    loose = tuple(evidence.json_block(files, a, a.kind.replace("_", " ")) for a in extras
                  if a.step_attempt_id not in evidence_of)
    lines = tuple(ArtifactLine(a.kind, path_of.get(a.step_attempt_id, "") if a.step_attempt_id else "",
                               a.size, files.location(a.path)) for a in artifacts)
    return tuple(screenshots), snapshots, tuple(traces), loose, lines
