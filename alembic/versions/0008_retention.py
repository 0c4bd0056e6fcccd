"""retention: indexes for pruning finished runs

Revision ID: 0008_retention
Revises: 0007
Create Date: 2026-12-03

``browserq prune`` and ``BROWSERQ_RETENTION_S`` look for the oldest finished runs of some
statuses a batch at a time: ``ix_runs_status_finished_at`` keeps each batch an index range scan
instead of a scan of every run. Deleting a batch's live-view tokens by ``run_id`` gets
``ix_live_tokens_run_id`` (the only run table without an index on it).
"""

from collections.abc import Sequence

from alembic import op

# revision identifiers, used by Alembic.
revision: str = "0008_retention"
down_revision: str | Sequence[str] | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index("ix_runs_status_finished_at", "runs", ["status", "finished_at"])
    op.create_index("ix_live_tokens_run_id", "live_tokens", ["run_id"])


def downgrade() -> None:
    op.drop_index("ix_live_tokens_run_id", table_name="live_tokens")
    op.drop_index("ix_runs_status_finished_at", table_name="runs")
