"""events: a JSON list on step attempts, for what the page did that the run answered (dialogs)

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-02

Every alert, confirm, prompt and beforeunload dialog a page shows is answered by the template's
policy (``settings.dialogs``, a step's ``dialog:``) and recorded on the step attempt it appeared
in: ``[{"type": "dialog", "dialog": "confirm", "message": …, "answer": "accepted", "prompt": …}]``.
One nullable column (NULL: nothing happened), so existing rows stay as they are; the downgrade
drops it (SQLite 3.35+ drops a plain column in place).
"""

from collections.abc import Sequence

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

from alembic import op

# revision identifiers, used by Alembic.
revision: str = "0006"
down_revision: str | Sequence[str] | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _json() -> sa.types.TypeEngine:
    return sa.JSON(none_as_null=True).with_variant(
        postgresql.JSONB(none_as_null=True, astext_type=sa.Text()), "postgresql"
    )


def upgrade() -> None:
    op.add_column("step_attempts", sa.Column("events", _json(), nullable=True))


def downgrade() -> None:
    op.execute("ALTER TABLE step_attempts DROP COLUMN events")
