"""debate.followups and debate.rerun_of: follow-up questions, and what a re-run re-runs

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-30 23:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel.sql.sqltypes
from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # Nullable columns with no default: debates saved before them have no follow-ups and
    # are nobody's re-run. No foreign key on rerun_of: a re-run outlives a deleted original.
    with op.batch_alter_table("debate", schema=None) as batch_op:
        batch_op.add_column(sa.Column("followups", sa.JSON(), nullable=True))
        batch_op.add_column(
            sa.Column("rerun_of", sqlmodel.sql.sqltypes.AutoString(length=32), nullable=True)
        )
        batch_op.create_index("ix_debate_rerun_of", ["rerun_of"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("debate", schema=None) as batch_op:
        batch_op.drop_index("ix_debate_rerun_of")
        batch_op.drop_column("rerun_of")
        batch_op.drop_column("followups")
