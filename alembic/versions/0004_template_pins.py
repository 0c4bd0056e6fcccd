"""template pins: a used name@version is pinned to its content hash; runs record that hash

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-01

``template_versions`` holds one row per ``name@version`` that a run used: the sha256 of the
canonical body (parsed YAML, sorted keys, no comments) and the stored body first used. The
producer refuses a file whose hash differs (``TemplateChanged``: bump the version). ``runs`` gets
``template_hash`` (plain ADD COLUMN, no rebuild: on SQLite a rebuild of runs would cascade-delete
steps).

Existing data is backfilled: every stored body is hashed, its runs get the hash, and each
``name@version`` is pinned to its newest body that a run used (older runs keep their own stored
bodies, which stay authoritative for them).
"""

from collections.abc import Sequence
from datetime import UTC, datetime

import sqlalchemy as sa

from alembic import op

# revision identifiers, used by Alembic.
revision: str = "0004"
down_revision: str | Sequence[str] | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "template_versions",
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("version", sa.String(length=100), nullable=False),
        sa.Column("content_hash", sa.String(length=64), nullable=False),
        sa.Column("template_id", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["template_id"], ["templates.id"], name="fk_template_versions_template_id_templates"
        ),
        sa.PrimaryKeyConstraint("name", "version", name="pk_template_versions"),
    )
    op.add_column("runs", sa.Column("template_hash", sa.String(length=64), nullable=True))
    _backfill(op.get_bind())


def _backfill(conn: sa.Connection) -> None:
    from browserq.templates.loader import canonical_hash

    used = conn.execute(
        sa.text(
            "SELECT t.id, t.name, t.version, t.body FROM templates t WHERE EXISTS "
            "(SELECT 1 FROM runs r WHERE r.template_id = t.id) ORDER BY t.id"
        )
    ).all()
    pins: dict[tuple[str, str], tuple[int, str]] = {}
    for template_id, name, version, body in used:
        try:
            digest = canonical_hash(body)
        except Exception:  # stored before today's limits; leave its runs without a hash
            continue
        conn.execute(
            sa.text("UPDATE runs SET template_hash = :h WHERE template_id = :id"),
            {"h": digest, "id": template_id},
        )
        pins[(name, version)] = (template_id, digest)  # ordered by id: the newest body wins
    now = datetime.now(UTC)
    if conn.dialect.name == "sqlite":
        now = now.replace(tzinfo=None)  # the store keeps naive UTC in SQLite
    for (name, version), (template_id, digest) in pins.items():
        conn.execute(
            sa.text(
                "INSERT INTO template_versions (name, version, content_hash, template_id, "
                "created_at) VALUES (:n, :v, :h, :id, :at)"
            ),
            {"n": name, "v": version, "h": digest, "id": template_id, "at": now},
        )


def downgrade() -> None:
    op.drop_column("runs", "template_hash")
    op.drop_table("template_versions")
