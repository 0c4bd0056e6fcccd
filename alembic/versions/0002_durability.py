"""durable runs: leases with fencing tokens, cancellation, run_transitions, batches

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-01

Like 0001, written for PostgreSQL and SQLite alike. The ``runs`` table is only ever *added to*
(``ALTER TABLE ... ADD COLUMN``), never rebuilt, so existing runs, step attempts and artifacts
stay where they are. SQLite cannot add a foreign key with ALTER, but it accepts one written inline
in ``ADD COLUMN`` (its default is NULL), which is how ``runs.batch_id`` gets its reference there.

SQLite's downgrade has to rebuild ``runs`` (a column that is part of a foreign key cannot be
dropped). With ``foreign_keys=ON`` dropping the old table would cascade into the child tables,
so their rows are copied aside first and put back afterwards.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

from alembic import op

# revision identifiers, used by Alembic.
revision: str = "0002"
down_revision: str | Sequence[str] | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_CHILD_TABLES = ("step_attempts", "artifacts", "run_transitions")


def _json() -> sa.types.TypeEngine:
    return sa.JSON(none_as_null=True).with_variant(
        postgresql.JSONB(none_as_null=True, astext_type=sa.Text()), "postgresql"
    )


def _bigint_pk() -> sa.types.TypeEngine:
    return sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def _ts() -> sa.types.TypeEngine:
    return sa.DateTime(timezone=True)


def _new_run_columns() -> list[sa.Column]:
    return [
        sa.Column("lease_owner", sa.String(length=200), nullable=True),
        sa.Column("lease_token", sa.Integer(), server_default=sa.text("0"), nullable=False),
        sa.Column("lease_expires_at", _ts(), nullable=True),
        sa.Column("takeovers", sa.Integer(), server_default=sa.text("0"), nullable=False),
        sa.Column("cancel_requested_at", _ts(), nullable=True),
        sa.Column("cancel_reason", sa.Text(), nullable=True),
        # batch_id is added separately (it carries a foreign key)
        sa.Column("enqueued_at", _ts(), nullable=True),
        sa.Column("status_reason", sa.Text(), nullable=True),
    ]


def upgrade() -> None:
    sqlite = op.get_bind().dialect.name == "sqlite"

    op.create_table(
        "batches",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("template_name", sa.String(length=200), nullable=False),
        sa.Column("template_version", sa.String(length=100), nullable=False),
        sa.Column("total", sa.Integer(), nullable=False),
        sa.Column("breaker", _json(), nullable=True),
        sa.Column("breaker_tripped_at", _ts(), nullable=True),
        sa.Column("breaker_reason", sa.Text(), nullable=True),
        sa.Column("created_at", _ts(), nullable=False),
        sa.Column("finished_at", _ts(), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_batches"),
    )

    for column in _new_run_columns():
        op.add_column("runs", column)
    if sqlite:
        op.execute(
            "ALTER TABLE runs ADD COLUMN batch_id VARCHAR(32) "
            "CONSTRAINT fk_runs_batch_id_batches REFERENCES batches (id)"
        )
    else:
        op.add_column("runs", sa.Column("batch_id", sa.String(length=32), nullable=True))
        op.create_foreign_key("fk_runs_batch_id_batches", "runs", "batches", ["batch_id"], ["id"])
    op.create_index("ix_runs_status_lease_expires_at", "runs", ["status", "lease_expires_at"])
    op.create_index("ix_runs_batch_id", "runs", ["batch_id"])

    op.create_table(
        "run_transitions",
        sa.Column("id", _bigint_pk(), autoincrement=True, nullable=False),
        sa.Column("run_id", sa.String(length=32), nullable=False),
        sa.Column("at", _ts(), nullable=False),
        sa.Column("from_status", sa.String(length=20), nullable=True),
        sa.Column("to_status", sa.String(length=20), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("worker", sa.String(length=200), nullable=True),
        sa.ForeignKeyConstraint(
            ["run_id"], ["runs.id"], name="fk_run_transitions_run_id_runs", ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name="pk_run_transitions"),
    )
    op.create_index("ix_run_transitions_run_id_id", "run_transitions", ["run_id", "id"])


def downgrade() -> None:
    sqlite = op.get_bind().dialect.name == "sqlite"
    op.drop_index("ix_run_transitions_run_id_id", table_name="run_transitions")
    op.drop_table("run_transitions")
    op.drop_index("ix_runs_batch_id", table_name="runs")
    op.drop_index("ix_runs_status_lease_expires_at", table_name="runs")
    names = [c.name for c in _new_run_columns()] + ["batch_id"]
    if sqlite:
        children = [t for t in _CHILD_TABLES if t != "run_transitions"]
        for table in children:
            op.execute(f"CREATE TEMP TABLE _keep_{table} AS SELECT * FROM {table}")
        with op.batch_alter_table("runs", recreate="always") as batch:
            for name in names:
                batch.drop_column(name)
        for table in children:  # the rebuild emptied them (ON DELETE CASCADE)
            op.execute(f"DELETE FROM {table}")
            op.execute(f"INSERT INTO {table} SELECT * FROM _keep_{table}")
            op.execute(f"DROP TABLE _keep_{table}")
    else:
        op.drop_constraint("fk_runs_batch_id_batches", "runs", type_="foreignkey")
        for name in names:
            op.drop_column("runs", name)
    op.drop_table("batches")
