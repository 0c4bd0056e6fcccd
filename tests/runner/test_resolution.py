"""Which steps a person's "retry from a later step" skips, inside repeats and blocks too, and how
long a checkpoint carries the decision (issue 22, item 14)."""

from __future__ import annotations

from browserq.runner.checkpoint import Resolution, path_key


def test_execution_order_of_paths() -> None:
    ordered = ["0", "1", "1[1].0", "1[1].2", "1[2].0", "1[10].0", "2", "2.0", "2.1", "3"]
    assert sorted(ordered, key=path_key) == ordered


def test_skips_from_the_unknown_step_up_to_the_start() -> None:
    decision = Resolution(unknown="1[2].1", start="3", by="ana")
    assert [
        p
        for p in ("0", "1", "1[1].1", "1[2].0", "1[2].1", "1[2].2", "1[3].0", "2", "3", "4")
        if decision.skips(p)
    ] == ["1[2].1", "1[2].2", "1[3].0", "2"]
    assert not decision.skips("1[2].1~login.0")  # login steps are the session's, not the template's


def test_a_compound_step_is_skipped_only_when_all_of_it_is() -> None:
    decision = Resolution(unknown="1.0", start="1.2", by="ana")
    assert not decision.skips("1")  # the block holds the start: it is entered
    assert [p for p in ("1.0", "1.1", "1.2") if decision.skips(p)] == ["1.0", "1.1"]
    assert Resolution(unknown="1", start="3", by="ana").skips(
        "2"
    )  # a whole repeat before the start


def test_a_checkpoint_carries_the_decision_until_the_start() -> None:
    decision = Resolution(unknown="2", start="4", by="ana", reason="checked")
    assert decision.pending_at("0") and decision.pending_at("3") and not decision.pending_at("4")
    record = {"path": "0", "resolution": decision.to_record()}
    assert (
        Resolution.from_record(record) == decision and Resolution.from_record({"path": "0"}) is None
    )
