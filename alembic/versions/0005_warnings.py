"""warnings: a JSON list on runs and on step attempts, for results a limit cut short

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-01

A run that completes although a limit stopped it early (a repeat that reached ``max`` while its
``until_missing``/``while_present`` selector still matched, an extract ``limit``, a wait shortened
to the step timeout) says so in ``warnings`` instead of looking complete. Two nullable columns
are added (NULL: no warning), so existing rows stay as they are; SQLite (3.35+) drops a plain
column with ``ALTER TABLE ... DROP COLUMN``, so the downgrade rebuilds nothing.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

from alembic import op

# revision identifiers, used by Alembic.
revision: str = "0005"
down_revision: str | Sequence[str] | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_TABLES = ("runs", "step_attempts")


def _json() -> sa.types.TypeEngine:
    return sa.JSON(none_as_null=True).with_variant(
        postgresql.JSONB(none_as_null=True, astext_type=sa.Text()), "postgresql"
    )


def upgrade() -> None:
    for table in _TABLES:
        op.add_column(table, sa.Column("warnings", _json(), nullable=True))


def downgrade() -> None:
    for table in _TABLES:
        op.execute(f"ALTER TABLE {table} DROP COLUMN warnings")
