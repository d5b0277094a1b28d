"""debate.lease_token, lease_holder, lease_expires_at: the lease of the worker running a debate

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-30 23:30:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel.sql.sqltypes
from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # Every debate starts unleased with token 0: the first worker to take one gets token 1.
    with op.batch_alter_table("debate", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("lease_token", sa.Integer(), nullable=False, server_default="0")
        )
        batch_op.add_column(
            sa.Column("lease_holder", sqlmodel.sql.sqltypes.AutoString(length=128), nullable=True)
        )
        batch_op.add_column(
            sa.Column("lease_expires_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True)
        )


def downgrade() -> None:
    with op.batch_alter_table("debate", schema=None) as batch_op:
        batch_op.drop_column("lease_expires_at")
        batch_op.drop_column("lease_holder")
        batch_op.drop_column("lease_token")
