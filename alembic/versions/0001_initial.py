"""initial schema: templates, runs, step_attempts, artifacts

Revision ID: 0001
Revises:
Create Date: 2026-11-30

Written to serve PostgreSQL and SQLite alike:

* timestamps are ``timestamp with time zone`` (SQLite keeps naive UTC; the models re-attach UTC);
* JSON columns are ``JSONB`` on PostgreSQL and ``JSON`` elsewhere;
* big-integer primary keys are ``INTEGER`` on SQLite so they alias the autoincrementing rowid;
* every constraint and index is named as the models' naming convention names it.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

from alembic import op

# revision identifiers, used by Alembic.
revision: str = "0001"
down_revision: str | Sequence[str] | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _json() -> sa.types.TypeEngine:
    return sa.JSON(none_as_null=True).with_variant(
        postgresql.JSONB(none_as_null=True, astext_type=sa.Text()), "postgresql"
    )


def _bigint_pk() -> sa.types.TypeEngine:
    return sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def _ts() -> sa.types.TypeEngine:
    return sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "templates",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("version", sa.String(length=100), nullable=False),
        sa.Column("content_hash", sa.String(length=64), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("source", sa.Text(), nullable=False),
        sa.Column("created_at", _ts(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_templates"),
        sa.UniqueConstraint(
            "name", "version", "content_hash", name="uq_templates_name_version_content_hash"
        ),
    )

    op.create_table(
        "runs",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("template_id", sa.Integer(), nullable=False),
        sa.Column("template_name", sa.String(length=200), nullable=False),
        sa.Column("template_version", sa.String(length=100), nullable=False),
        sa.Column("params", _json(), nullable=False),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("task_id", sa.String(length=200), nullable=True),
        sa.Column("worker", sa.String(length=200), nullable=True),
        sa.Column("queue", sa.String(length=200), nullable=True),
        sa.Column("idempotency_key", sa.String(length=200), nullable=True),
        sa.Column("tenant", sa.String(length=200), nullable=True),
        sa.Column("queued_at", _ts(), nullable=True),
        sa.Column("started_at", _ts(), nullable=True),
        sa.Column("finished_at", _ts(), nullable=True),
        sa.Column("heartbeat_at", _ts(), nullable=True),
        sa.Column("timeout_s", sa.Float(), nullable=False),
        sa.Column("outputs", _json(), nullable=True),
        sa.Column("error_code", sa.String(length=40), nullable=True),
        sa.Column("error_message", sa.Text(), nullable=True),
        sa.Column("error_step_path", sa.String(length=200), nullable=True),
        sa.Column("checkpoint", _json(), nullable=True),
        sa.Column("secrets", sa.Text(), nullable=True),
        sa.Column("created_at", _ts(), nullable=False),
        sa.ForeignKeyConstraint(
            ["template_id"], ["templates.id"], name="fk_runs_template_id_templates"
        ),
        sa.PrimaryKeyConstraint("id", name="pk_runs"),
        sa.UniqueConstraint("idempotency_key", name="uq_runs_idempotency_key"),
    )
    op.create_index("ix_runs_status_created_at", "runs", ["status", "created_at"])
    op.create_index(
        "ix_runs_template_name_template_version", "runs", ["template_name", "template_version"]
    )
    op.create_index("ix_runs_created_at", "runs", ["created_at"])

    op.create_table(
        "step_attempts",
        sa.Column("id", _bigint_pk(), autoincrement=True, nullable=False),
        sa.Column("run_id", sa.String(length=32), nullable=False),
        sa.Column("run_attempt", sa.Integer(), nullable=False),
        sa.Column("step_path", sa.String(length=200), nullable=False),
        sa.Column("step_id", sa.String(length=200), nullable=True),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("action", sa.String(length=20), nullable=False),
        sa.Column("inputs", _json(), nullable=False),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("error_code", sa.String(length=40), nullable=True),
        sa.Column("error_message", sa.Text(), nullable=True),
        sa.Column("retryable", sa.Boolean(), nullable=True),
        sa.Column("started_at", _ts(), nullable=False),
        sa.Column("finished_at", _ts(), nullable=True),
        sa.Column("duration_ms", sa.Float(), nullable=True),
        sa.Column("url_before", sa.Text(), nullable=True),
        sa.Column("url_after", sa.Text(), nullable=True),
        sa.Column("output", _json(), nullable=True),
        sa.ForeignKeyConstraint(
            ["run_id"], ["runs.id"], name="fk_step_attempts_run_id_runs", ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name="pk_step_attempts"),
    )
    op.create_index("ix_step_attempts_run_id_id", "step_attempts", ["run_id", "id"])
    op.create_index(
        "ix_step_attempts_error_code",
        "step_attempts",
        ["error_code"],
        postgresql_where=sa.text("status = 'failed'"),
        sqlite_where=sa.text("status = 'failed'"),
    )

    op.create_table(
        "artifacts",
        sa.Column("id", _bigint_pk(), autoincrement=True, nullable=False),
        sa.Column("run_id", sa.String(length=32), nullable=False),
        sa.Column("step_attempt_id", sa.BigInteger(), nullable=True),
        sa.Column("kind", sa.String(length=30), nullable=False),
        sa.Column("path", sa.Text(), nullable=False),
        sa.Column("content_type", sa.String(length=200), nullable=False),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("sha256", sa.String(length=64), nullable=False),
        sa.Column("created_at", _ts(), nullable=False),
        sa.ForeignKeyConstraint(
            ["run_id"], ["runs.id"], name="fk_artifacts_run_id_runs", ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["step_attempt_id"],
            ["step_attempts.id"],
            name="fk_artifacts_step_attempt_id_step_attempts",
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("id", name="pk_artifacts"),
    )
    op.create_index("ix_artifacts_run_id", "artifacts", ["run_id"])
    op.create_index("ix_artifacts_step_attempt_id", "artifacts", ["step_attempt_id"])


def downgrade() -> None:
    op.drop_index("ix_artifacts_step_attempt_id", table_name="artifacts")
    op.drop_index("ix_artifacts_run_id", table_name="artifacts")
    op.drop_table("artifacts")
    op.drop_index("ix_step_attempts_error_code", table_name="step_attempts")
    op.drop_index("ix_step_attempts_run_id_id", table_name="step_attempts")
    op.drop_table("step_attempts")
    op.drop_index("ix_runs_created_at", table_name="runs")
    op.drop_index("ix_runs_template_name_template_version", table_name="runs")
    op.drop_index("ix_runs_status_created_at", table_name="runs")
    op.drop_table("runs")
    op.drop_table("templates")
