"""eval_run and eval_item: ``argue eval`` runs and their answered items

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-01 00:00:00.000000
"""

from collections.abc import Sequence

import sqlalchemy as sa
import sqlmodel.sql.sqltypes
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "eval_run",
        sa.Column("id", sqlmodel.sql.sqltypes.AutoString(length=32), nullable=False),
        sa.Column("task", sqlmodel.sql.sqltypes.AutoString(length=255), nullable=False),
        sa.Column("seed", sa.Integer(), nullable=False),
        sa.Column("rounds", sa.Integer(), nullable=False),
        sa.Column("samples", sa.Integer(), nullable=False),
        sa.Column("conditions", sa.JSON(), nullable=False),
        sa.Column("seats", sa.JSON(), nullable=False),
        sa.Column("questions", sa.JSON(), nullable=False),
        sa.Column("status", sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
        sa.Column("status_reason", sqlmodel.sql.sqltypes.AutoString(), nullable=True),
        sa.Column("created_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.Column("finished_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=True),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_eval_run_created", "eval_run", ["created_at"], unique=False)
    op.create_table(
        "eval_item",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("run_id", sqlmodel.sql.sqltypes.AutoString(length=32), nullable=False),
        sa.Column("item_index", sa.Integer(), nullable=False),
        sa.Column("condition", sqlmodel.sql.sqltypes.AutoString(length=32), nullable=False),
        sa.Column("question", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("expected", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("answer", sqlmodel.sql.sqltypes.AutoString(), nullable=True),
        sa.Column("reply", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("correct", sa.Boolean(), nullable=False),
        sa.Column("unparsable", sa.Boolean(), nullable=False),
        sa.Column("debate_id", sqlmodel.sql.sqltypes.AutoString(length=32), nullable=True),
        sa.Column("calls", sa.Integer(), nullable=False),
        sa.Column("input_tokens", sa.Integer(), nullable=False),
        sa.Column("output_tokens", sa.Integer(), nullable=False),
        sa.Column("cost_usd", sqlmodel.sql.sqltypes.AutoString(length=32), nullable=True),
        sa.Column("seconds", sa.Float(), nullable=False),
        sa.Column("created_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(["run_id"], ["eval_run.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("run_id", "item_index", "condition", name="uq_eval_item"),
    )
    op.create_index("ix_eval_item_run_id", "eval_item", ["run_id"], unique=False)


def downgrade() -> None:
    op.drop_index("ix_eval_item_run_id", table_name="eval_item")
    op.drop_table("eval_item")
    op.drop_index("ix_eval_run_created", "eval_run")
    op.drop_table("eval_run")
