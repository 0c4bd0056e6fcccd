"""identities: named visitor identities (sticky proxy, fingerprint seed, storage), leased to runs

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-15

A new table only; nothing existing is touched, so the downgrade simply drops it. The index on
(pool, lease_expires_at) also serves lookups by pool alone (its leftmost column).
"""

from collections.abc import Sequence

import sqlalchemy as sa

from alembic import op

# revision identifiers, used by Alembic.
revision: str = "0003"
down_revision: str | Sequence[str] | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _ts() -> sa.types.TypeEngine:
    return sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "identities",
        sa.Column("name", sa.String(length=100), nullable=False),
        sa.Column("pool", sa.String(length=100), nullable=True),
        sa.Column("fingerprint_seed", sa.String(length=64), nullable=False),
        sa.Column("proxy_id", sa.String(length=64), nullable=True),
        sa.Column("region", sa.String(length=20), nullable=True),
        sa.Column("locale", sa.String(length=20), nullable=True),
        sa.Column("timezone", sa.String(length=64), nullable=True),
        sa.Column("storage_encrypted", sa.Text(), nullable=True),
        sa.Column("storage_saved_at", _ts(), nullable=True),
        sa.Column("lease_run_id", sa.String(length=32), nullable=True),
        sa.Column("lease_owner", sa.String(length=200), nullable=True),
        sa.Column("lease_expires_at", _ts(), nullable=True),
        sa.Column("lease_token", sa.Integer(), server_default=sa.text("0"), nullable=False),
        sa.Column("uses", sa.Integer(), server_default=sa.text("0"), nullable=False),
        sa.Column("created_at", _ts(), nullable=False),
        sa.Column("last_used_at", _ts(), nullable=True),
        sa.Column("disabled_reason", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("name", name="pk_identities"),
    )
    op.create_index(
        "ix_identities_pool_lease_expires_at", "identities", ["pool", "lease_expires_at"]
    )
    # Plain ADD COLUMN (no batch rebuild: on SQLite a rebuild of runs would cascade-delete steps).
    op.add_column("runs", sa.Column("identity", sa.String(length=100), nullable=True))
    op.add_column("runs", sa.Column("identity_pool", sa.String(length=100), nullable=True))


def downgrade() -> None:
    op.drop_column("runs", "identity_pool")
    op.drop_column("runs", "identity")
    op.drop_index("ix_identities_pool_lease_expires_at", table_name="identities")
    op.drop_table("identities")
