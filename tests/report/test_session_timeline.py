"""An agent session's timeline in its report, from records alone: commands in order with their
target and outcome, a navigation, a pause, a takeover, and how the session ended."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import Any

from browserq.report.session import session_timeline, target_of

T0 = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)


def step(n: int, at_s: float, action: str, inputs: dict[str, Any], *, status: str = "succeeded",
         code: str | None = None, before: str = "http://a/1", after: str = "http://a/1", run_attempt: int = 1) -> Any:
    return SimpleNamespace(step_path=str(n), action=action, inputs=inputs, status=status, error_code=code,
                           error_message=f"{code}: why" if code else None, started_at=T0 + timedelta(seconds=at_s),
                           finished_at=T0 + timedelta(seconds=at_s + 0.2), duration_ms=200.0, url_before=before,
                           url_after=after, run_attempt=run_attempt)


def test_commands_navigations_pauses_takeovers_and_the_end_in_order() -> None:
    run = SimpleNamespace(template_name="session", status="cancelled", error_code="SESSION_IDLE",
                          error_message="no command for its idle_timeout_s (300 s)", started_at=T0)
    steps = [
        step(0, 0, "navigate", {"url": "http://a/1"}, before="about:blank"),
        step(1, 1, "click", {"selector": "ref=e1.4", "side_effect": True}, code="REF_STALE", status="failed"),
        step(2, 30, "fill", {"selector": {"role": "textbox", "name": "User"}, "value": "x"}),
        step(3, 31, "get", {"what": "title"}, run_attempt=2),
    ]
    timeline = session_timeline(run, steps, [])
    kinds = [(e.kind, e.action, e.target, e.outcome) for e in timeline.entries]
    assert kinds == [
        ("command", "navigate", "http://a/1", "succeeded"),
        ("navigation", "", "", ""),
        ("command", "click", "ref e1.4", "REF_STALE"),
        ("pause", "", "", ""),
        ("command", "fill", '{"name": "User", "role": "textbox"}', "succeeded"),
        ("takeover", "", "", ""),
        ("command", "get", "what title", "succeeded"),
    ]
    assert timeline.entries[2].side_effect and not timeline.entries[2].ok and timeline.entries[2].message
    assert "no command for 29 s" in timeline.entries[3].message
    assert (timeline.commands, timeline.failed) == (4, 1)
    assert (timeline.end.status, timeline.end.code) == ("cancelled", "SESSION_IDLE")
    assert "idle_timeout_s" in timeline.end.why


def test_a_value_typed_is_never_the_target() -> None:
    assert target_of({"selector": "#password", "value": "secret"}) == "#password"
    assert target_of({}) == ""
