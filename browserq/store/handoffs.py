"""Handoffs: a run waiting for a person, and the one-time tokens that open its live view.

The worker that holds the run begins a handoff (``running`` → ``waiting_for_human``, fenced by
its lease token, which it keeps: the lease is still renewed while the person works) and ends it
(back to ``running`` when the run goes on; a timeout, a give-up or a cancel end the run from
``waiting_for_human`` through ``finish_run``). A wait that ends any other way (the sweeper, a
takeover) is closed with the transition (:func:`browserq.store.handoff_rows.close_open_handoff`).

A live-view token is 32 random bytes handed out once, in a URL; the database keeps its SHA-256
only, so neither a backup nor an operator's query yields a link that works. It opens the view
once (:meth:`~Handoffs.redeem_live_token`), before it expires and while its handoff is open.

A *follow* token (kind ``follow``, kept hashed the same way) is what a person's open live-view page
holds to find the run again when its worker dies: any live view answers it from the database
(:meth:`~Handoffs.follow_handoff`) with a fresh link to the run's next wait, once.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from browserq.errors import StoreError
from browserq.store.clock import db_now
from browserq.store.handoff_rows import WATCH, open_handoff_row
from browserq.store.human_models import Handoff, LiveToken
from browserq.store.models import Run, RunStatus, RunTransition
from browserq.store.plumbing import Database, moved_call
from browserq.store.states import FINISHED, HELD_VALUES
from browserq.store.transitions import Transitions
from browserq.store.views import HandoffView, to_view

#: How long a live-view link stays valid unless the caller says (BROWSERQ_LIVE_TOKEN_TTL_S).
DEFAULT_LIVE_TOKEN_TTL_S = 900.0
#: The purpose of a follow token (a page's way to the run's next wait, never a link itself).
FOLLOW = "follow"
#: How the reason of a handover's transition starts (a stopping worker re-enqueued a waiting run):
#: counted by :meth:`Handoffs.handovers`, as a handover spends none of the run's retries.
HANDOVER_REASON = "handed over"

@dataclass(frozen=True, slots=True)
class FollowAnswer:
    """Where a follow token leads: ``moved`` (``url``: a fresh link to the run's new wait),
    ``waiting`` (the run does not wait for a person anywhere yet), ``ended`` (``status``: the run
    finished) or ``refused`` (unknown, used or expired)."""

    state: str
    url: str | None = None
    status: str | None = None


def live_link(base_url: str, handoff_id: int, token: str) -> str:
    """The URL a person opens: the worker's live view, this handoff, its one-time token."""
    return f"{base_url.rstrip('/')}/live/{handoff_id}?token={token}"


def handoff_data(view: HandoffView) -> dict[str, object]:
    """A handoff as a webhook tells it (the live-view link is added when the POST is made)."""
    return {"id": view.id, "step": view.step_path, "kind": view.kind, "message": view.message,
            "until": view.until, "deadline": view.deadline_at.isoformat()}


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class Handoffs:
    """Waits for people and live-view tokens (``store.handoffs``); a wait's status changes go
    through ``transitions``."""

    if not TYPE_CHECKING:  # the Store's old ``handoffs(run_id)``: a clear error (hidden from mypy)
        __call__ = moved_call("handoffs")

    def __init__(self, db: Database, transitions: Transitions) -> None:
        self.db = db
        self.transitions = transitions

    def begin_handoff(
        self,
        run_id: str,
        *,
        token: int | None,
        run_attempt: int,
        step_path: str,
        kind: str,
        message: str,
        until: str | None,
        timeout_s: float,
        live_base_url: str | None,
        worker: str | None = None,
    ) -> HandoffView:
        """``running`` → ``waiting_for_human`` with a handoffs row, in one fenced transaction."""
        action = f"handing run {run_id} to a person"

        def body(s: Session, retried: bool) -> HandoffView:
            run = self._fenced_run(s, run_id, token, action)
            if retried and run.status == RunStatus.WAITING_FOR_HUMAN.value:
                earlier = open_handoff_row(s, run_id)
                if earlier is not None and earlier.step_path == step_path:
                    return to_view(HandoffView, earlier)  # our earlier try committed
            now = db_now(s)
            self.transitions.apply(
                s, run, RunStatus.WAITING_FOR_HUMAN, reason=f"waiting for a person: {message}",
                worker=worker or run.worker, now=now, fenced=token is not None,
            )
            row = Handoff(
                run_id=run_id, run_attempt=run_attempt, step_path=step_path, kind=kind,
                message=message, until=until, started_at=now,
                deadline_at=now + timedelta(seconds=timeout_s), live_base_url=live_base_url,
                inputs=0,
            )
            s.add(row)
            s.flush()
            view = to_view(HandoffView, row)
            for event in s.info.get("webhooks", ()):  # its webhook says what the person is asked
                event.payload = {**event.payload, "handoff": handoff_data(view)}
            return view

        return self.db.tx(action, body, write=True)

    def end_handoff(
        self,
        run_id: str,
        *,
        token: int | None,
        handoff_id: int,
        outcome: str,
        inputs: int,
        resume: bool,
        reason: str,
        worker: str | None = None,
    ) -> None:
        """Close the handoff with its ``outcome``; ``resume``: the run goes on (→ ``running``).
        Otherwise the run stays ``waiting_for_human`` until the worker finishes it (failed or
        cancelled), in the transaction that records its end."""
        action = f"ending the handoff of run {run_id}"

        def body(s: Session, _retried: bool) -> None:
            run = self._fenced_run(s, run_id, token, action)
            now = db_now(s)
            s.execute(
                update(Handoff)
                .where(Handoff.id == handoff_id, Handoff.ended_at.is_(None))
                .values(ended_at=now, outcome=outcome, inputs=inputs)
                .execution_options(synchronize_session=False)
            )
            if resume and run.status == RunStatus.WAITING_FOR_HUMAN.value:
                self.transitions.apply(
                    s, run, RunStatus.RUNNING, reason=reason, worker=worker or run.worker,
                    now=now, fenced=token is not None,
                )

        self.db.tx(action, body, write=True)

    def begin_watch(self, run_id: str, *, token: int | None, run_attempt: int, live_base_url: str,
                    for_s: float) -> HandoffView:
        """A running run shown in the live view (``BROWSERQ_LIVE_VIEW_WHILE_RUNNING``): a handoffs
        row of kind ``watch`` that links can be minted for; the run's status does not change."""
        action = f"opening the live view of run {run_id}"

        def body(s: Session, _retried: bool) -> HandoffView:
            self._fenced_run(s, run_id, token, action)  # still its run
            now = db_now(s)
            row = Handoff(run_id=run_id, run_attempt=run_attempt, step_path="", kind=WATCH,
                          message="The run is running; this view shows its page.", until=None, started_at=now,
                          deadline_at=now + timedelta(seconds=for_s), live_base_url=live_base_url, inputs=0)
            s.add(row)
            s.flush()
            return to_view(HandoffView, row)

        return self.db.tx(action, body, write=True)

    def end_watch(self, handoff_id: int) -> None:
        """The run's execution ended here: its watch link stops working."""
        self.db.tx(f"closing live view {handoff_id}", lambda s, _r: s.execute(
            update(Handoff).where(Handoff.id == handoff_id, Handoff.ended_at.is_(None))
            .values(ended_at=db_now(s), outcome="ended").execution_options(synchronize_session=False)
        ), write=True)

    def _fenced_run(self, s: Session, run_id: str, token: int | None, action: str) -> Run:
        """The run's row, locked and fenced by ``token`` (None: an in-process run, no lease)."""
        run = self.db.lock_run(s, run_id)
        if run is None:
            raise StoreError(f"{action}: no such run {run_id!r}")
        if token is not None:
            self.db.fence_run(run, token, action)
        return run

    def handoffs(self, run_id: str) -> list[HandoffView]:
        """The run's handoffs, oldest first."""
        query = select(Handoff).where(Handoff.run_id == run_id).order_by(Handoff.id)
        return self.db.read(
            f"reading handoffs of run {run_id}",
            lambda s: [to_view(HandoffView, row) for row in s.scalars(query)],
        )

    def handovers(self, run_id: str) -> int:
        """How often stopping workers handed the run over (its transitions say so)."""
        query = select(func.count()).select_from(RunTransition).where(
            RunTransition.run_id == run_id, RunTransition.reason.startswith(HANDOVER_REASON)
        )
        return self.db.read(f"counting handovers of run {run_id}", lambda s: int(s.scalar(query) or 0))

    def open_handoff(self, run_id: str) -> HandoffView | None:
        """The handoff the run waits in now, if any."""

        def body(s: Session) -> HandoffView | None:
            row = open_handoff_row(s, run_id)
            return None if row is None else to_view(HandoffView, row)

        return self.db.read(f"reading the open handoff of run {run_id}", body)

    # --- live-view tokens ------------------------------------------------------------------------
    def mint_live_token(
        self, run_id: str, *, purpose: str, ttl_s: float | None = None
    ) -> str | None:
        """A fresh one-time live-view link for the run's open handoff, valid ``ttl_s`` (and no
        longer than the handoff); None when the run waits for nobody or has no live view."""
        ttl = DEFAULT_LIVE_TOKEN_TTL_S if ttl_s is None else float(ttl_s)
        if ttl <= 0:
            raise ValueError(f"ttl_s must be positive, got {ttl_s}")
        secret = secrets.token_urlsafe(32)

        def body(s: Session, _retried: bool) -> str | None:
            handoff = open_handoff_row(s, run_id)
            status = s.scalar(select(Run.status).where(Run.id == run_id))
            if handoff is None or handoff.live_base_url is None or status not in HELD_VALUES:
                return None  # nobody waits, no view is served, or its worker is gone
            now = db_now(s)
            s.add(
                LiveToken(
                    token_hash=token_hash(secret), run_id=run_id, handoff_id=handoff.id,
                    purpose=purpose[:20], created_at=now,
                    expires_at=min(now + timedelta(seconds=ttl), handoff.deadline_at),
                )
            )
            return live_link(handoff.live_base_url, handoff.id, secret)

        return self.db.tx(f"minting a live-view link for run {run_id}", body, write=True)

    def redeem_live_token(self, token: str, *, handoff_id: int) -> bool:
        """True once: the token is this open handoff's, unused and unexpired (it is now used)."""
        if not token or len(token) > 200:
            return False
        digest = token_hash(token)

        def body(s: Session, _retried: bool) -> bool:
            now = db_now(s)
            row = s.get(LiveToken, digest, with_for_update=self.db.pg)
            if row is None or row.handoff_id != handoff_id or row.used_at is not None or row.purpose == FOLLOW:
                return False
            if row.expires_at <= now:
                return False
            handoff = s.get(Handoff, handoff_id)
            if handoff is None or handoff.ended_at is not None:
                return False
            row.used_at = now
            return True

        return self.db.tx(f"redeeming a live-view token of handoff {handoff_id}", body, write=True)

    def mint_follow_token(self, run_id: str, *, handoff_id: int, ttl_s: float | None = None) -> str:
        """A secret the page of ``handoff_id`` keeps to find the run's next wait: valid until
        ``ttl_s`` past the wait's deadline (the run may wait again long after its worker died)."""
        ttl = DEFAULT_LIVE_TOKEN_TTL_S if ttl_s is None else float(ttl_s)
        secret = secrets.token_urlsafe(32)

        def body(s: Session, _retried: bool) -> str:
            handoff = s.get(Handoff, handoff_id)
            if handoff is None or handoff.run_id != run_id:
                raise StoreError(f"no handoff {handoff_id} of run {run_id!r}")
            now = db_now(s)
            s.add(LiveToken(token_hash=token_hash(secret), run_id=run_id, handoff_id=handoff_id, purpose=FOLLOW,
                            created_at=now, expires_at=max(now, handoff.deadline_at) + timedelta(seconds=ttl)))
            return secret

        return self.db.tx(f"minting a follow token of handoff {handoff_id}", body, write=True)

    def follow_handoff(self, token: str, *, handoff_id: int, ttl_s: float | None = None) -> FollowAnswer:
        """Where the page of ``handoff_id`` that holds ``token`` should go now. ``moved`` only to
        a later wait of the run that a live view serves (the token is then used up)."""
        if not token or len(token) > 200:
            return FollowAnswer("refused")
        digest = token_hash(token)
        ttl = DEFAULT_LIVE_TOKEN_TTL_S if ttl_s is None else float(ttl_s)
        secret = secrets.token_urlsafe(32)

        def body(s: Session, _retried: bool) -> FollowAnswer:
            now = db_now(s)
            row = s.get(LiveToken, digest, with_for_update=self.db.pg)
            if (row is None or row.purpose != FOLLOW or row.handoff_id != handoff_id or row.used_at is not None
                    or row.expires_at <= now):
                return FollowAnswer("refused")
            status = s.scalar(select(Run.status).where(Run.id == row.run_id))
            if status is None or RunStatus(status) in FINISHED:
                return FollowAnswer("ended", status=status)
            handoff = open_handoff_row(s, row.run_id)
            if (status != RunStatus.WAITING_FOR_HUMAN.value or handoff is None or handoff.kind == WATCH
                    or handoff.id <= handoff_id or handoff.live_base_url is None):
                return FollowAnswer("waiting")
            row.used_at = now
            s.add(LiveToken(token_hash=token_hash(secret), run_id=row.run_id, handoff_id=handoff.id,
                            purpose="moved", created_at=now,
                            expires_at=min(now + timedelta(seconds=ttl), handoff.deadline_at)))
            return FollowAnswer("moved", url=live_link(handoff.live_base_url, handoff.id, secret))

        return self.db.tx(f"following handoff {handoff_id}", body, write=True)


__all__ = [
    "DEFAULT_LIVE_TOKEN_TTL_S", "FOLLOW", "HANDOVER_REASON", "WATCH", "FollowAnswer", "Handoffs", "live_link",
    "token_hash",
]
