"""turn.ended_early: why a completed turn stopped short

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-30 20:10:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel.sql.sqltypes
from alembic import op


revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # A nullable column with no default: a plain ADD COLUMN on SQLite and PostgreSQL alike,
    # and the turns saved before it read as having ended on their own.
    with op.batch_alter_table("turn", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("ended_early", sqlmodel.sql.sqltypes.AutoString(length=16), nullable=True)
        )


def downgrade() -> None:
    with op.batch_alter_table("turn", schema=None) as batch_op:
        batch_op.drop_column("ended_early")
