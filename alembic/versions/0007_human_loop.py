"""a person in the loop: handoffs, one-time live-view tokens, webhook outbox and attempts

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-02

A run can wait for a person (``waiting_for_human``, a status string: no constraint to change).
``handoffs`` records each wait; ``live_tokens`` holds the SHA-256 of each one-time live-view token
(never the token); ``webhook_deliveries`` is the outbox of run events, written with the status
change it reports, and ``webhook_attempts`` every POST of one. Two nullable run columns:
``human_wait_s`` (the handoff budget, added to Celery's time limits) and ``notify_url``. The
downgrade drops all of it (SQLite 3.35+ drops a plain column in place).
"""

from collections.abc import Sequence

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

from alembic import op

# revision identifiers, used by Alembic.
revision: str = "0007"
down_revision: str | Sequence[str] | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _ts() -> sa.types.TypeEngine:
    return sa.DateTime(timezone=True)


def _json() -> sa.types.TypeEngine:
    return sa.JSON(none_as_null=True).with_variant(
        postgresql.JSONB(none_as_null=True, astext_type=sa.Text()), "postgresql"
    )


def _pk() -> sa.types.TypeEngine:
    return sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def _run_fk(table: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        ["run_id"], ["runs.id"], name=f"fk_{table}_run_id_runs", ondelete="CASCADE"
    )


def upgrade() -> None:
    op.add_column("runs", sa.Column("human_wait_s", sa.Float(), nullable=True))
    op.add_column("runs", sa.Column("notify_url", sa.Text(), nullable=True))
    op.create_table(
        "handoffs",
        sa.Column("id", _pk(), autoincrement=True, nullable=False),
        sa.Column("run_id", sa.String(length=32), nullable=False),
        sa.Column("run_attempt", sa.Integer(), nullable=False),
        sa.Column("step_path", sa.String(length=200), nullable=False),
        sa.Column("kind", sa.String(length=20), nullable=False),
        sa.Column("message", sa.Text(), nullable=False),
        sa.Column("until", sa.Text(), nullable=True),
        sa.Column("started_at", _ts(), nullable=False),
        sa.Column("deadline_at", _ts(), nullable=False),
        sa.Column("ended_at", _ts(), nullable=True),
        sa.Column("outcome", sa.String(length=20), nullable=True),
        sa.Column("live_base_url", sa.Text(), nullable=True),
        sa.Column("inputs", sa.Integer(), nullable=False),
        _run_fk("handoffs"),
        sa.PrimaryKeyConstraint("id", name="pk_handoffs"),
    )
    op.create_index("ix_handoffs_run_id_id", "handoffs", ["run_id", "id"])
    op.create_table(
        "live_tokens",
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("run_id", sa.String(length=32), nullable=False),
        sa.Column("handoff_id", sa.BigInteger(), nullable=False),
        sa.Column("purpose", sa.String(length=20), nullable=False),
        sa.Column("created_at", _ts(), nullable=False),
        sa.Column("expires_at", _ts(), nullable=False),
        sa.Column("used_at", _ts(), nullable=True),
        _run_fk("live_tokens"),
        sa.ForeignKeyConstraint(
            ["handoff_id"], ["handoffs.id"], name="fk_live_tokens_handoff_id_handoffs",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("token_hash", name="pk_live_tokens"),
    )
    op.create_index("ix_live_tokens_handoff_id", "live_tokens", ["handoff_id"])
    op.create_table(
        "webhook_deliveries",
        sa.Column("id", _pk(), autoincrement=True, nullable=False),
        sa.Column("run_id", sa.String(length=32), nullable=False),
        sa.Column("event", sa.String(length=30), nullable=False),
        sa.Column("event_key", sa.String(length=120), nullable=False),
        sa.Column("url", sa.Text(), nullable=False),
        sa.Column("payload", _json(), nullable=False),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("created_at", _ts(), nullable=False),
        sa.Column("dispatched_at", _ts(), nullable=True),
        sa.Column("next_attempt_at", _ts(), nullable=True),
        sa.Column("claimed_until", _ts(), nullable=True),
        sa.Column("delivered_at", _ts(), nullable=True),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("last_error", sa.Text(), nullable=True),
        _run_fk("webhook_deliveries"),
        sa.PrimaryKeyConstraint("id", name="pk_webhook_deliveries"),
        sa.UniqueConstraint("event_key", name="uq_webhook_deliveries_event_key"),
    )
    op.create_index("ix_webhook_deliveries_run_id", "webhook_deliveries", ["run_id"])
    op.create_index(
        "ix_webhook_deliveries_status_next_attempt_at", "webhook_deliveries", ["status", "next_attempt_at"]
    )
    op.create_table(
        "webhook_attempts",
        sa.Column("id", _pk(), autoincrement=True, nullable=False),
        sa.Column("delivery_id", sa.BigInteger(), nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("at", _ts(), nullable=False),
        sa.Column("status_code", sa.Integer(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("duration_ms", sa.Float(), nullable=True),
        sa.ForeignKeyConstraint(
            ["delivery_id"], ["webhook_deliveries.id"],
            name="fk_webhook_attempts_delivery_id_webhook_deliveries", ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name="pk_webhook_attempts"),
    )
    op.create_index("ix_webhook_attempts_delivery_id", "webhook_attempts", ["delivery_id"])


def downgrade() -> None:
    op.drop_index("ix_webhook_attempts_delivery_id", table_name="webhook_attempts")
    op.drop_table("webhook_attempts")
    op.drop_index("ix_webhook_deliveries_status_next_attempt_at", table_name="webhook_deliveries")
    op.drop_index("ix_webhook_deliveries_run_id", table_name="webhook_deliveries")
    op.drop_table("webhook_deliveries")
    op.drop_index("ix_live_tokens_handoff_id", table_name="live_tokens")
    op.drop_table("live_tokens")
    op.drop_index("ix_handoffs_run_id_id", table_name="handoffs")
    op.drop_table("handoffs")
    op.execute("ALTER TABLE runs DROP COLUMN notify_url")
    op.execute("ALTER TABLE runs DROP COLUMN human_wait_s")
